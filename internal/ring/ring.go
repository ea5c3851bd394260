// Package ring holds the byte-level pieces of a session's output, shared by
// the gateway's sessions and the in-container holder: Buffer, the numbered
// replay ring, and Slab, the allocator a pump carves its output chunks from.
// It imports nothing, so the holder binary links no more than it needs.
package ring

// MinSize is the smallest replay buffer the contract allows.
const MinSize = 10 << 10

// Buffer is a circular byte buffer that numbers every byte ever written from
// 0, so a client can ask for "the bytes from offset N on". It is not safe for
// concurrent use; its owner's lock guards it.
type Buffer struct {
	buf  []byte
	base int64 // offset of the first byte ever written (see SetBase)
	end  int64 // offset of the next byte to be written
}

// New returns a ring keeping the last size bytes.
func New(size int) *Buffer {
	return &Buffer{buf: make([]byte, size)}
}

// Write appends p, overwriting the oldest bytes when full.
func (r *Buffer) Write(p []byte) {
	size := len(r.buf)
	if len(p) >= size {
		r.end += int64(len(p) - size)
		p = p[len(p)-size:]
	}
	pos := int(r.end % int64(size))
	n := copy(r.buf[pos:], p)
	copy(r.buf, p[n:])
	r.end += int64(len(p))
}

// SetBase makes an empty ring number its bytes from base on: a session
// adopted from a holder continues the holder's numbering, so a client
// resuming from before a gateway restart lands on the same bytes.
func (r *Buffer) SetBase(base int64) { r.base, r.end = base, base }

// Start is the offset of the oldest byte still held.
func (r *Buffer) Start() int64 { return max(r.base, r.end-int64(len(r.buf))) }

// End is the offset of the next byte to be written (the total written).
func (r *Buffer) End() int64 { return r.end }

// Since returns a copy of the bytes from offset off to End, and false when
// off is no longer (or not yet) held.
func (r *Buffer) Since(off int64) ([]byte, bool) {
	if off < r.Start() || off > r.end {
		return nil, false
	}
	n := int(r.end - off)
	out := make([]byte, n)
	size := int64(len(r.buf))
	pos := int(off % size)
	k := copy(out, r.buf[pos:min(len(r.buf), pos+n)])
	copy(out[k:], r.buf[:n-k])
	return out, true
}

// Bytes returns a copy of everything held.
func (r *Buffer) Bytes() []byte {
	b, _ := r.Since(r.Start())
	return b
}
