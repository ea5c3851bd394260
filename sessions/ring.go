package sessions

// Ring is a circular byte buffer that numbers every byte ever written from 0,
// so a client can ask for "the bytes from offset N on". It is not safe for
// concurrent use; Session.mu guards it.
type Ring struct {
	buf  []byte
	base int64 // offset of the first byte ever written (see setBase)
	end  int64 // offset of the next byte to be written
}

// NewRing returns a ring keeping the last size bytes.
func NewRing(size int) *Ring {
	return &Ring{buf: make([]byte, size)}
}

// Write appends p, overwriting the oldest bytes when full.
func (r *Ring) Write(p []byte) {
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

// setBase makes an empty ring number its bytes from base on: a session
// adopted from a holder continues the holder's numbering, so a client
// resuming from before a gateway restart lands on the same bytes.
func (r *Ring) setBase(base int64) { r.base, r.end = base, base }

// Start is the offset of the oldest byte still held.
func (r *Ring) Start() int64 { return max(r.base, r.end-int64(len(r.buf))) }

// End is the offset of the next byte to be written (the total written).
func (r *Ring) End() int64 { return r.end }

// Since returns a copy of the bytes from offset off to End, and false when
// off is no longer (or not yet) held.
func (r *Ring) Since(off int64) ([]byte, bool) {
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
func (r *Ring) Bytes() []byte {
	b, _ := r.Since(r.Start())
	return b
}
