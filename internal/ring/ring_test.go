package ring

import (
	"bytes"
	"fmt"
	"testing"
)

func TestRingKeepsTailAndNumbersBytes(t *testing.T) {
	r := New(16)
	var all []byte
	for i := range 50 {
		p := []byte(fmt.Sprintf("<%d>", i))
		r.Write(p)
		all = append(all, p...)
		want := all[max(0, len(all)-16):]
		if got := r.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("after %d writes Bytes = %q, want %q", i+1, got, want)
		}
		if r.End() != int64(len(all)) {
			t.Fatalf("End = %d, want %d", r.End(), len(all))
		}
	}
	for off := r.Start(); off <= r.End(); off++ {
		got, ok := r.Since(off)
		if !ok || !bytes.Equal(got, all[off:]) {
			t.Fatalf("Since(%d) = %q, %v; want %q", off, got, ok, all[off:])
		}
	}
	if _, ok := r.Since(r.Start() - 1); ok {
		t.Fatal("Since before Start must report the gap")
	}
	if _, ok := r.Since(r.End() + 1); ok {
		t.Fatal("Since after End must be refused")
	}
}

func TestRingWriteLargerThanBuffer(t *testing.T) {
	r := New(8)
	r.Write([]byte("abc"))
	r.Write([]byte("0123456789ABCDEF"))
	if got := string(r.Bytes()); got != "89ABCDEF" {
		t.Fatalf("Bytes = %q", got)
	}
	if r.End() != 19 || r.Start() != 11 {
		t.Fatalf("Start, End = %d, %d; want 11, 19", r.Start(), r.End())
	}
}

func TestRingNumbersFromItsBase(t *testing.T) {
	r := New(16)
	r.SetBase(1000)
	if r.Start() != 1000 || r.End() != 1000 {
		t.Fatalf("empty ring at base 1000: Start %d End %d", r.Start(), r.End())
	}
	r.Write([]byte("0123456789"))
	if b, ok := r.Since(1004); !ok || string(b) != "456789" {
		t.Fatalf("Since(1004) = %q, %v", b, ok)
	}
	if _, ok := r.Since(999); ok {
		t.Fatal("Since(999): before the base is not held")
	}
	r.Write([]byte("abcdefghij"))
	if r.Start() != 1004 || string(r.Bytes()) != "456789abcdefghij" {
		t.Fatalf("full ring: Start %d Bytes %q", r.Start(), r.Bytes())
	}
}
