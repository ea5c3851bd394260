package sftpwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// packet is one packet of a reference parse: its length and the body
// bytes the stream holds of it.
type packet struct {
	size  uint32
	body  []byte
	ended bool
}

// split parses a whole stream the plain way: length, then body.
func split(stream []byte) []packet {
	var out []packet
	for len(stream) > 0 {
		if len(stream) < 4 {
			return append(out, packet{}) // a length field cut short
		}
		size := binary.BigEndian.Uint32(stream)
		stream = stream[4:]
		n := int(min(uint64(size), uint64(len(stream))))
		out = append(out, packet{size: size, body: stream[:n], ended: uint64(n) == uint64(size)})
		stream = stream[n:]
	}
	return out
}

// pieces cuts stream at the points cuts says (each byte a piece length,
// 0 meaning 1).
func pieces(stream, cuts []byte) [][]byte {
	var out [][]byte
	for i := 0; len(stream) > 0; i++ {
		n := 1
		if len(cuts) > 0 {
			n = max(1, int(cuts[i%len(cuts)]))
		}
		n = min(n, len(stream))
		out = append(out, stream[:n])
		stream = stream[n:]
	}
	return out
}

func pkt(typ byte, fields ...[]byte) []byte {
	b := Begin(nil, typ)
	for _, f := range fields {
		b = append(b, f...)
	}
	return Finish(b)
}

func seedStreams() [][]byte {
	open := pkt(TypeOpen, AppendUint32(nil, 1), AppendString(nil, "/tmp/up"), AppendUint32(nil, FlagWrite), AppendUint32(nil, 0))
	write := pkt(TypeWrite, AppendUint32(nil, 2), AppendString(nil, "h1"), AppendUint64(nil, 0), AppendString(nil, string(make([]byte, 300))))
	return [][]byte{
		nil,
		open,
		append(append([]byte{}, open...), write...),
		{0, 0, 0, 0, 0, 0, 0, 1, TypeInit},
		{0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		{0, 0, 1},
	}
}

// The framer finds the same packets, bodies and ends as a whole-stream
// parse however the stream is cut, and the scanner hands on the bounded
// head of every packet whose head arrived, once.
func FuzzFramer(f *testing.F) {
	for i, s := range seedStreams() {
		f.Add(s, []byte{byte(i), 3, 1, 7})
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		want := split(stream)
		var fr Framer
		var got []packet
		cur := -1
		for _, p := range pieces(stream, cuts) {
			for len(p) > 0 {
				if fr.Between() {
					got = append(got, packet{})
					cur++
				}
				n, body, end := fr.Next(p)
				if n <= 0 || n > len(p) {
					t.Fatalf("Next consumed %d of %d bytes", n, len(p))
				}
				p = p[n:]
				got[cur].body = append(got[cur].body, body...)
				if size, ok := fr.Size(); ok {
					got[cur].size = size
				}
				got[cur].ended = end
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d packets, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].size != want[i].size || !bytes.Equal(got[i].body, want[i].body) || got[i].ended != want[i].ended {
				t.Fatalf("packet %d: %d bytes of %d, ended %v; want %d of %d, ended %v",
					i, len(got[i].body), got[i].size, got[i].ended, len(want[i].body), want[i].size, want[i].ended)
			}
		}

		const max = 16
		var heads [][]byte
		s := &Scanner{Max: max, On: func(h []byte) { heads = append(heads, bytes.Clone(h)) }}
		for _, p := range pieces(stream, cuts) {
			if n, err := s.Write(p); n != len(p) || err != nil {
				t.Fatalf("Scanner.Write: %d, %v", n, err)
			}
		}
		var wantHeads [][]byte
		for _, w := range want {
			// (A length field cut short is size 0 and not ended: no head.)
			if h := int(min(uint64(w.size), max)); (w.ended || w.size > 0) && len(w.body) >= h {
				wantHeads = append(wantHeads, w.body[:h])
			}
		}
		if len(heads) != len(wantHeads) {
			t.Fatalf("%d heads, want %d", len(heads), len(wantHeads))
		}
		for i := range heads {
			if !bytes.Equal(heads[i], wantHeads[i]) {
				t.Fatalf("head %d: %x, want %x", i, heads[i], wantHeads[i])
			}
		}
	})
}

// Fields read from any bytes never panic, never run past the end, and
// agree with reading the same fields by hand.
func FuzzFields(f *testing.F) {
	for _, s := range seedStreams() {
		if len(s) > 4 {
			f.Add(s[4:], []byte{0, 1, 3, 1, 2})
		}
	}
	f.Add([]byte{TypeData, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff}, []byte{0, 1, 3})
	f.Fuzz(func(t *testing.T, b, ops []byte) {
		r := NewFields(b)
		off, bad := 0, false
		for _, op := range ops {
			switch op % 4 {
			case 0:
				got, ok := r.Byte(), off+1 <= len(b) && !bad
				if ok && got != b[off] || !ok && got != 0 {
					t.Fatalf("Byte at %d: %d", off, got)
				}
				bad, off = !ok, off+1
			case 1:
				got, ok := r.Uint32(), off+4 <= len(b) && !bad
				if ok && got != binary.BigEndian.Uint32(b[off:]) || !ok && got != 0 {
					t.Fatalf("Uint32 at %d: %d", off, got)
				}
				bad, off = !ok, off+4
			case 2:
				got, ok := r.Uint64(), off+8 <= len(b) && !bad
				if ok && got != binary.BigEndian.Uint64(b[off:]) || !ok && got != 0 {
					t.Fatalf("Uint64 at %d: %d", off, got)
				}
				bad, off = !ok, off+8
			case 3:
				got, gotOK := r.String()
				ok := off+4 <= len(b) && !bad
				var n uint64
				if ok {
					n = uint64(binary.BigEndian.Uint32(b[off:]))
					ok = n <= uint64(len(b)-off-4)
				}
				if gotOK != ok || ok && !bytes.Equal(got, b[off+4:off+4+int(n)]) || !ok && got != nil {
					t.Fatalf("String at %d: %q, %v; want ok %v", off, got, gotOK, ok)
				}
				bad = !ok
				if ok {
					off += 4 + int(n)
				}
			}
			if r.OK() == bad {
				t.Fatalf("OK() = %v after op %d, want %v", r.OK(), op%4, !bad)
			}
		}
	})
}

// ReadHeader reads the length and type, refuses an empty packet, and
// says io.EOF only at a clean end.
func TestReadHeader(t *testing.T) {
	var hdr [HeaderLen]byte
	in := bytes.NewReader([]byte{0, 0, 0, 9, TypeOpen, 0, 0, 0, 0, 0, 0, 0})
	if size, err := ReadHeader(in, &hdr); size != 9 || err != nil || hdr[4] != TypeOpen {
		t.Fatalf("ReadHeader: %d, %v, type %d", size, err, hdr[4])
	}
	if _, err := ReadHeader(bytes.NewReader(nil), &hdr); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	if _, err := ReadHeader(bytes.NewReader([]byte{0, 0}), &hdr); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut short: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadHeader(bytes.NewReader([]byte{0, 0, 0, 0, 1}), &hdr); err == nil {
		t.Fatal("a packet of length 0 was read")
	}
}
