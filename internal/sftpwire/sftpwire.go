package sftpwire

import (
	"encoding/binary"
	"io"
)

// Packet types (draft-ietf-secsh-filexfer-02, section 3).
const (
	TypeInit          = 1
	TypeVersion       = 2
	TypeOpen          = 3
	TypeClose         = 4
	TypeRead          = 5
	TypeWrite         = 6
	TypeStatus        = 101
	TypeHandle        = 102
	TypeData          = 103
	TypeExtended      = 200
	TypeExtendedReply = 201
)

// FlagWrite is SSH_FXF_WRITE, the open flag of a file opened for writing.
const FlagWrite = 0x02

// HeaderLen is a packet's length field and type byte.
const HeaderLen = 5

// Framer follows the packet boundaries of a stream given to Next in
// pieces of any size. The zero value is at the start of a packet.
type Framer struct {
	hdr   [4]byte
	nhdr  int    // bytes of the length field so far (4: the body, or ended)
	size  uint32 // the current packet's length, once nhdr is 4
	left  uint32 // body bytes still to come
	ended bool   // the packet ended: the next Next starts another
}

// Next consumes p's first bytes up to the end of the current packet's
// length field or of its body, and returns how many (at least one, for a
// non-empty p), the body bytes among them (nil while the length field is
// read), and whether the packet ended with them.
func (f *Framer) Next(p []byte) (n int, body []byte, end bool) {
	if f.ended {
		f.nhdr, f.ended = 0, false
	}
	if len(p) == 0 {
		return 0, nil, false
	}
	if f.nhdr < 4 {
		n = copy(f.hdr[f.nhdr:], p)
		f.nhdr += n
		if f.nhdr < 4 {
			return n, nil, false
		}
		f.size = binary.BigEndian.Uint32(f.hdr[:])
		f.left = f.size
		f.ended = f.left == 0
		return n, nil, f.ended
	}
	k := uint32(min(uint64(len(p)), uint64(f.left)))
	f.left -= k
	f.ended = f.left == 0
	return int(k), p[:k], f.ended
}

// Size returns the current packet's length, and false while its length
// field is not yet whole. After a packet ends it is that packet's, until
// the next Next.
func (f *Framer) Size() (uint32, bool) { return f.size, f.nhdr == 4 }

// Between reports whether the stream is between packets: nothing of one
// has been given, or the last one ended.
func (f *Framer) Between() bool { return f.nhdr == 0 || f.ended }

// Scanner is an io.Writer that splits an SFTP stream into packets and
// calls On with each packet's head, its first Max bytes after the length
// (all of a shorter packet), as soon as they are in; the rest of the
// packet is skipped. The head is only valid during the call. Write never
// fails.
type Scanner struct {
	On  func(head []byte)
	Max int

	f      Framer
	head   []byte
	called bool // On was called for the current packet
}

func (s *Scanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k, body, end := s.f.Next(p)
		p = p[k:]
		if size, ok := s.f.Size(); ok && !s.called {
			want := int(min(uint64(size), uint64(s.Max)))
			take := min(want-len(s.head), len(body))
			s.head = append(s.head, body[:take]...)
			if len(s.head) == want {
				s.On(s.head)
				s.called = true
			}
		}
		if end {
			s.head, s.called = s.head[:0], false
		}
	}
	return n, nil
}

// ReadHeader reads a packet's length field and type byte into hdr from r
// and returns the length (type byte included). At r's end before any byte
// it returns io.EOF; a length of zero is an error.
func ReadHeader(r io.Reader, hdr *[HeaderLen]byte) (uint32, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if size < 1 {
		return 0, errEmptyPacket
	}
	return size, nil
}

type wireError string

func (e wireError) Error() string { return string(e) }

const errEmptyPacket = wireError("sftp: a packet of length 0")

// Fields reads a packet's fields in order. A field past the end, or a
// string whose length runs past it, makes that field and every later one
// zero and OK false.
type Fields struct {
	b   []byte
	bad bool
}

// NewFields reads the fields of b (a packet after its length field: the
// type byte first).
func NewFields(b []byte) Fields { return Fields{b: b} }

func (r *Fields) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

// Byte reads one byte (the packet type).
func (r *Fields) Byte() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

// Uint32 reads a big-endian uint32 (a request id, a length, flags).
func (r *Fields) Uint32() uint32 {
	if p := r.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

// Uint64 reads a big-endian uint64 (an offset).
func (r *Fields) Uint64() uint64 {
	if p := r.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// String reads an SSH string: a uint32 length, then the bytes, which
// alias the packet. False (and nil) if it runs past the end.
func (r *Fields) String() ([]byte, bool) {
	n := r.Uint32()
	if r.bad || uint64(n) > uint64(len(r.b)) {
		r.bad = true
		return nil, false
	}
	return r.take(int(n)), true
}

// OK reports whether every field read so far was there.
func (r *Fields) OK() bool { return !r.bad }

// Begin starts a packet of type typ in b: a length field to fill by
// Finish, then the type byte.
func Begin(b []byte, typ byte) []byte { return append(b, 0, 0, 0, 0, typ) }

// AppendUint32 appends a big-endian uint32.
func AppendUint32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// AppendUint64 appends a big-endian uint64.
func AppendUint64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// AppendString appends an SSH string: its uint32 length, then s.
func AppendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

// Finish sets the length field of the packet that b holds (from its
// start) to the bytes after it, and returns b.
func Finish(b []byte) []byte {
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}
