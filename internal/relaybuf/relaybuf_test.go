package relaybuf

import (
	"bytes"
	"errors"
	"testing"
)

type recorder struct{ writes [][]byte }

func (r *recorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func TestWriteJoinsQueuedChunksInOrder(t *testing.T) {
	var r recorder
	if err := Write(&r, [][]byte{[]byte("a"), []byte("bc"), nil, []byte("d")}); err != nil {
		t.Fatal(err)
	}
	if len(r.writes) != 1 || string(r.writes[0]) != "abcd" {
		t.Fatalf("writes = %q, want one write of \"abcd\"", r.writes)
	}
}

func TestWriteSendsALoneKeystrokeAsItIs(t *testing.T) {
	var r recorder
	key := []byte("x")
	if err := Write(&r, [][]byte{key}); err != nil {
		t.Fatal(err)
	}
	if len(r.writes) != 1 || string(r.writes[0]) != "x" {
		t.Fatalf("writes = %q", r.writes)
	}
}

func TestWriteSplitsAtMaxWrite(t *testing.T) {
	var r recorder
	big := bytes.Repeat([]byte("b"), MaxWrite)
	half := bytes.Repeat([]byte("h"), MaxWrite/2)
	if err := Write(&r, [][]byte{half, half, []byte("!"), big, half}); err != nil {
		t.Fatal(err)
	}
	var lens []int
	var all []byte
	for _, w := range r.writes {
		lens = append(lens, len(w))
		if len(w) > MaxWrite {
			t.Errorf("a write of %d bytes, over MaxWrite", len(w))
		}
		all = append(all, w...)
	}
	want := bytes.Join([][]byte{half, half, []byte("!"), big, half}, nil)
	if !bytes.Equal(all, want) {
		t.Fatal("the bytes written differ from the chunks in order")
	}
	if len(r.writes) != 4 {
		t.Errorf("write sizes %v, want 4 writes (half+half, !, big, half)", lens)
	}
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) { f.n++; return 0, errors.New("broken pipe") }

func TestWriteStopsAtTheFirstError(t *testing.T) {
	f := &failing{}
	big := bytes.Repeat([]byte("b"), MaxWrite)
	if err := Write(f, [][]byte{big, big}); err == nil || f.n != 1 {
		t.Fatalf("err %v after %d writes, want the error after 1", err, f.n)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkWrite is the relay's write of what a client had queued: it
// must not allocate.
func BenchmarkWrite(b *testing.B) {
	chunks := [][]byte{bytes.Repeat([]byte("x"), 2600), bytes.Repeat([]byte("y"), 40), bytes.Repeat([]byte("z"), 4096)}
	var w discard
	b.ReportAllocs()
	b.SetBytes(2600 + 40 + 4096)
	for b.Loop() {
		if err := Write(w, chunks); err != nil {
			b.Fatal(err)
		}
	}
}
