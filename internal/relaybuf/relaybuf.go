// Package relaybuf writes the chunks of output a client has queued with as
// few writes as it can: a lone chunk as it is, several joined into one
// write (one SSH channel write, one WebSocket frame) through a pooled
// buffer, so that a relay allocates nothing per chunk.
package relaybuf

import (
	"io"
	"sync"
)

// MaxWrite bounds one joined write: a client far behind is sent its queue
// in several writes rather than through a buffer as large as the queue.
const MaxWrite = 256 << 10

var pool = sync.Pool{New: func() any { b := make([]byte, 0, MaxWrite); return &b }}

// Write writes bufs to w in order. Consecutive chunks are joined while the
// sum stays within MaxWrite; a chunk that is alone (or larger) is written
// without a copy. It stops at the first error.
func Write(w io.Writer, bufs [][]byte) error {
	var scratch *[]byte
	defer func() {
		if scratch != nil {
			*scratch = (*scratch)[:0]
			pool.Put(scratch)
		}
	}()
	for i := 0; i < len(bufs); {
		j, total := i+1, len(bufs[i])
		for j < len(bufs) && total+len(bufs[j]) <= MaxWrite {
			total += len(bufs[j])
			j++
		}
		p := bufs[i]
		if j > i+1 {
			if scratch == nil {
				scratch = pool.Get().(*[]byte)
			}
			b := (*scratch)[:0]
			for _, c := range bufs[i:j] {
				b = append(b, c...)
			}
			*scratch = b
			p = b
		}
		if len(p) > 0 {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}
