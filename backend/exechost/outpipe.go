package exechost

import (
	"io"
	"sync"
)

// outPipeMax bounds what an outPipe holds: beyond it the push exec's writes
// wait for the session, which is the flow control of a shell whose output
// nobody takes (the session's own queues drop slow clients).
const outPipeMax = 256 << 10

// outPipe carries a push exec's output from its stream copier (client-go's,
// for Kubernetes) to the session's pump. io.Pipe, used before, hands every
// write over in lockstep: the copier waited for the pump to take each frame
// of a few bytes before it read the next one off the connection, and each
// frame became a chunk of its own for the session (its queues, its
// emulator, one SSH or WebSocket write each). outPipe buffers writes up to
// outPipeMax, so the copier keeps reading while the pump works, and one
// Read takes all that is queued. Its zero value is not usable: see
// newOutPipe.
type outPipe struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when buf, rbuf, err or rclosed change
	buf     []byte     // queued output from off on; nil while empty (then pooled)
	off     int
	rbuf    []byte // a waiting reader's buffer: a write fills it directly
	rn      int    // what a write put into rbuf
	err     error  // the writer's close (io.EOF or why the stream broke); read after buf
	rclosed bool   // the reader closed: writes fail
}

// outPipeBufs holds the buffers of drained pipes: a busy stream takes one
// back at once, and an idle session holds none.
var outPipeBufs = sync.Pool{New: func() any { b := make([]byte, 0, outPipeMax); return &b }}

func newOutPipe() *outPipe {
	p := &outPipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Write queues b, waiting while the pipe is full. When the reader waits
// and nothing is queued, b goes straight into the reader's buffer (no
// second copy, as with io.Pipe), and only what does not fit is queued. It
// fails with io.ErrClosedPipe once either side closed.
func (p *outPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for len(b) > 0 {
		for len(p.buf)-p.off >= outPipeMax && p.err == nil && !p.rclosed {
			p.cond.Wait()
		}
		if p.err != nil || p.rclosed {
			return n, io.ErrClosedPipe
		}
		if p.rbuf != nil && len(p.buf) == p.off {
			k := copy(p.rbuf, b)
			p.rbuf, p.rn = nil, k
			b, n = b[k:], n+k
			p.cond.Broadcast()
			continue
		}
		if p.buf == nil {
			p.buf = (*outPipeBufs.Get().(*[]byte))[:0]
		} else if p.off > 0 && len(p.buf)+len(b) > cap(p.buf) { // reuse the space read
			p.buf = p.buf[:copy(p.buf, p.buf[p.off:])]
			p.off = 0
		}
		k := min(len(b), outPipeMax-(len(p.buf)-p.off))
		p.buf = append(p.buf, b[:k]...)
		b, n = b[k:], n+k
		p.cond.Broadcast()
	}
	return n, nil
}

// Read takes what is queued, up to len(b), waiting while nothing is. After
// the writer closed it returns the queued bytes, then the close's error.
func (p *outPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) == p.off && p.err == nil && !p.rclosed {
		// Wait for a write, offering b to it. Only one Read at a time
		// (the session's pump) may wait.
		p.rbuf, p.rn = b, 0
		for p.rbuf != nil && len(p.buf) == p.off && p.err == nil && !p.rclosed {
			p.cond.Wait()
		}
		if p.rbuf == nil { // a write filled it
			n := p.rn
			p.rn = 0
			return n, nil
		}
		p.rbuf = nil
	}
	if p.rclosed {
		return 0, io.ErrClosedPipe
	}
	if len(p.buf) == p.off {
		return 0, p.err
	}
	n := copy(b, p.buf[p.off:])
	p.off += n
	if p.off == len(p.buf) {
		b := p.buf[:0]
		outPipeBufs.Put(&b)
		p.buf, p.off = nil, 0
	}
	p.cond.Broadcast()
	return n, nil
}

// CloseWithError ends the writing side: reads return err (io.EOF when nil)
// once the queued bytes are read. Later closes change nothing.
func (p *outPipe) CloseWithError(err error) {
	if err == nil {
		err = io.EOF
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
}

// Close ends the writing side with io.EOF.
func (p *outPipe) Close() error {
	p.CloseWithError(nil)
	return nil
}

// CloseRead ends the reading side: what is queued is dropped, and waiting
// and later writes and reads fail with io.ErrClosedPipe.
func (p *outPipe) CloseRead() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rclosed, p.buf, p.off, p.rbuf = true, nil, 0, nil
	p.cond.Broadcast()
}
