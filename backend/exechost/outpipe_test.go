package exechost

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// TestOutPipeJoinsQueuedWrites: what the executor wrote while the session
// was busy comes out in one Read, in order (io.Pipe gave one Read per
// write, after making each writer wait).
func TestOutPipeJoinsQueuedWrites(t *testing.T) {
	p := newOutPipe()
	for _, s := range []string{"a", "bc", "", "def"} {
		if n, err := p.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	buf := make([]byte, 64)
	n, err := p.Read(buf)
	if err != nil || string(buf[:n]) != "abcdef" {
		t.Fatalf("Read = %q, %v; want \"abcdef\" in one read", buf[:n], err)
	}
	if p.buf != nil {
		t.Errorf("a drained pipe holds a %d-byte buffer", cap(p.buf))
	}
	// A short read leaves the rest for the next one.
	_, _ = p.Write([]byte("0123456789"))
	n, _ = p.Read(buf[:4])
	m, _ := p.Read(buf[4:])
	if got := string(buf[:n+m]); got != "0123456789" || n != 4 {
		t.Fatalf("reads = %q (first %d bytes), want 0123456789 split after 4", got, n)
	}
}

// TestOutPipeHoldsBackAWriterWhenFull: past outPipeMax the writer waits
// for the session (flow control), and nothing is lost or reordered.
func TestOutPipeHoldsBackAWriterWhenFull(t *testing.T) {
	p := newOutPipe()
	want := bytes.Repeat([]byte("0123456789abcdef"), (outPipeMax+100_000)/16)
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Write(want)
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a write past the limit returned before anything was read: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	got := make([]byte, 0, len(want))
	buf := make([]byte, 32<<10)
	for len(got) < len(want) {
		n, err := p.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from the bytes written")
	}
}

// TestOutPipeEnds: the reader gets the queued bytes, then the writer's
// error; a reader that closes fails a waiting writer (the stream then
// ends instead of waiting for a session that is gone).
func TestOutPipeEnds(t *testing.T) {
	p := newOutPipe()
	_, _ = p.Write([]byte("last words"))
	broke := errors.New("stream broke")
	p.CloseWithError(broke)
	p.Close() // a later close changes nothing
	if _, err := p.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write after close: %v", err)
	}
	buf := make([]byte, 64)
	if n, err := p.Read(buf); err != nil || string(buf[:n]) != "last words" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if _, err := p.Read(buf); !errors.Is(err, broke) {
		t.Fatalf("Read after the queued bytes: %v, want %v", err, broke)
	}

	p = newOutPipe()
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Write(make([]byte, outPipeMax+1))
		wrote <- err
	}()
	time.Sleep(50 * time.Millisecond)
	p.CloseRead()
	select {
	case err := <-wrote:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("the waiting writer got %v, want io.ErrClosedPipe", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CloseRead did not release a writer waiting on a full pipe")
	}
	if _, err := p.Read(buf); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Read after CloseRead: %v", err)
	}
}

func BenchmarkOutPipe(b *testing.B) {
	p := newOutPipe()
	chunk := make([]byte, 4<<10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 256<<10)
		for {
			if _, err := p.Read(buf); err != nil {
				return
			}
		}
	}()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = p.Write(chunk)
	}
	p.Close()
	<-done
}

// TestOutPipeKeepsOrderUnderRace: writes of every size against reads of
// every size, the reader often waiting (writes go straight into its
// buffer) and often behind (they queue): the bytes come out whole and in
// order.
func TestOutPipeKeepsOrderUnderRace(t *testing.T) {
	p := newOutPipe()
	var want []byte
	for i := 0; len(want) < 3*outPipeMax; i++ {
		want = append(want, bytes.Repeat([]byte{byte('a' + i%26)}, 1+(i*7919)%9000)...)
	}
	go func() {
		for off, i := 0, 0; off < len(want); i++ {
			n := min(len(want)-off, 1+(i*104729)%20000)
			if _, err := p.Write(want[off : off+n]); err != nil {
				return
			}
			off += n
		}
		p.Close()
	}()
	var got []byte
	for i := 0; ; i++ {
		buf := make([]byte, 1+(i*31337)%40000)
		n, err := p.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes that differ from the %d written", len(got), len(want))
	}
}
