package ring

import (
	"bytes"
	"testing"
)

func TestSlabChunksAreSeparateAndFollowTheStream(t *testing.T) {
	var s Slab
	// Quiet: small reads are copied out of the small buffer.
	b := s.Buf()
	if len(b) != smallRead {
		t.Fatalf("first read buffer %d bytes, want the small one (%d)", len(b), smallRead)
	}
	copy(b, "abc")
	c1 := s.Chunk(3)
	copy(s.Buf(), "def")
	c2 := s.Chunk(3)
	c1 = append(c1, 'Z') // a holder appending must not reach the next chunk
	if string(c2) != "def" || string(c1[:3]) != "abc" {
		t.Fatalf("chunks %q %q", c1, c2)
	}
	// A read that fills the small buffer switches to large reads.
	copy(s.Buf(), bytes.Repeat([]byte("x"), smallRead))
	s.Chunk(smallRead)
	if b := s.Buf(); len(b) < bulkMinRead {
		t.Fatalf("read buffer after a full read: %d bytes, want at least %d", len(b), bulkMinRead)
	}
	c3 := s.Chunk(40 << 10)
	if len(c3) != 40<<10 || cap(c3) != 40<<10 {
		t.Fatalf("bulk chunk len %d cap %d", len(c3), cap(c3))
	}
	// A short read: quiet again, and the large block is let go.
	s.Chunk(10)
	if len(s.Buf()) != smallRead || cap(s.free) > smallBlock {
		t.Fatalf("after a short read: read buffer %d, block %d, want the small ones", len(s.Buf()), cap(s.free))
	}
}
