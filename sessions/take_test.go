package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// takeAll waits on Ready and takes until want bytes arrived or Take
// returns an error.
func takeAll(t *testing.T, c *Client, want int) ([][]byte, error) {
	t.Helper()
	var got [][]byte
	n := 0
	deadline := time.After(5 * time.Second)
	for n < want {
		select {
		case <-c.Ready():
		case <-deadline:
			t.Fatalf("timed out after %d of %d bytes", n, want)
		}
		var err error
		before := len(got)
		got, _, err = c.Take(got)
		for _, b := range got[before:] {
			n += len(b)
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

func TestTakeReturnsOutputInOrderThenTheCause(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.emit("one ")
	p.emit("two ")
	p.emit("three")
	got, err := takeAll(t, c, len("one two three"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(bytes.Join(got, nil)); s != "one two three" {
		t.Fatalf("took %q, want the output in order", s)
	}
	if _, _, err := c.Take(nil); err != nil {
		t.Fatalf("Take with nothing queued: %v, want nil", err)
	}
	p.emit("bye")
	p.exit(3)
	var rest [][]byte
	for err == nil {
		<-c.Ready()
		rest, _, err = c.Take(rest)
	}
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Fatalf("Take after the exit: %v, want exit status 3", err)
	}
	if s := string(bytes.Join(rest, nil)); s != "bye" {
		t.Fatalf("the output queued before the exit: %q, want \"bye\"", s)
	}
}

func TestTakeIsBoundedAndReadyFiresForTheRest(t *testing.T) {
	r, fb := newTestRegistry(t, Config{ClientQueue: 4 << 20})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	// Queue more than TakeMax before taking anything.
	chunk := strings.Repeat("x", 64<<10)
	for range 8 {
		p.emit(chunk)
	}
	waitQueued(t, c, 8*len(chunk))
	<-c.Ready()
	first, _, err := c.Take(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range first {
		n += len(b)
	}
	if n > TakeMax || n == 0 {
		t.Fatalf("one Take returned %d bytes, want 1..%d", n, TakeMax)
	}
	rest, err := takeAll(t, c, 8*len(chunk)-n)
	if err != nil {
		t.Fatal(err)
	}
	total := n
	for _, b := range rest {
		total += len(b)
	}
	if total != 8*len(chunk) {
		t.Fatalf("took %d bytes in all, want %d", total, 8*len(chunk))
	}
}

// waitQueued waits until c holds n bytes.
func waitQueued(t *testing.T, c *Client, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		q := c.queued
		c.mu.Unlock()
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAfterCloseRunsWhenTheClientIsCut(t *testing.T) {
	r, fb := newTestRegistry(t, Config{BufferSize: 16 << 10, ClientQueue: 16 << 10})
	c := attach(t, r, "web1", AttachOptions{})
	cut := make(chan error, 1)
	c.AfterClose(func() { cut <- c.Cause() })
	p := fb.last()
	p.emit(strings.Repeat("y", 8<<10))
	p.emit(strings.Repeat("y", 16<<10)) // over the queue: dropped as too slow
	select {
	case err := <-cut:
		if !errors.Is(err, ErrSlowClient) {
			t.Fatalf("AfterClose saw %v, want ErrSlowClient", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AfterClose did not run after the client was cut")
	}
	// Registered after the close: runs at once.
	again := make(chan struct{})
	c.AfterClose(func() { close(again) })
	select {
	case <-again:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterClose on a closed client did not run")
	}
}

// BenchmarkRelay is the session side of the relay: the pump reads a chunk
// from the shell, delivers it to one client, and the client takes it. In
// steady state it allocates nothing per chunk (the slab's blocks amortize
// to well under one allocation per chunk).
func BenchmarkRelay(b *testing.B) {
	for _, size := range []int{40, 2600, 32 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			fb, c := benchAttach(b)
			p := fb.last()
			chunk := bytes.Repeat([]byte("z"), size)
			var bufs [][]byte
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = p.outW.Write(chunk)
				got := 0
				for got < size {
					<-c.Ready()
					var err error
					bufs, _, err = c.Take(bufs[:0])
					if err != nil {
						b.Fatal(err)
					}
					for _, x := range bufs {
						got += len(x)
					}
					clear(bufs)
				}
			}
		})
	}
}

// BenchmarkFanout delivers 32 KiB chunks to 1 and to 100 clients of one
// session, each taking its output in its own goroutine as the listeners
// do; ns/op is per chunk delivered to all of them.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("%dclients", n), func(b *testing.B) {
			fb := newFakeBackend()
			r, err := New(Config{Backend: fb, ClientQueue: 64 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Shutdown(b.Context())
			chunk := bytes.Repeat([]byte("z"), 32<<10)
			got := make(chan int, n)
			var clients []*Client
			for range n {
				c, err := r.Attach(b.Context(), "web1", AttachOptions{})
				if err != nil {
					b.Fatal(err)
				}
				clients = append(clients, c)
			}
			for _, c := range clients {
				go func() {
					var bufs [][]byte
					for {
						<-c.Ready()
						var err error
						bufs, _, err = c.Take(bufs[:0])
						k := 0
						for _, x := range bufs {
							k += len(x)
						}
						clear(bufs)
						if k > 0 {
							got <- k
						}
						if err != nil {
							return
						}
					}
				}()
			}
			p := fb.last()
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = p.outW.Write(chunk)
				for need := n * len(chunk); need > 0; {
					need -= <-got
				}
			}
			for _, c := range clients {
				c.Detach()
			}
		})
	}
}

// BenchmarkTake is Take alone, on one goroutine: a chunk queued (as the
// pump does, under the session's lock), then taken. No scheduler in the
// loop, so it shows what Take itself costs per call; it allocates nothing.
func BenchmarkTake(b *testing.B) {
	_, c := benchAttach(b)
	s, _ := c.session()
	chunk := bytes.Repeat([]byte("z"), 40)
	var bufs [][]byte
	var err error
	b.ReportAllocs()
	for b.Loop() {
		s.mu.Lock()
		c.enqueue(chunk)
		s.mu.Unlock()
		var ev Event
		bufs, ev, err = c.Take(bufs[:0])
		if len(bufs) != 1 || ev != nil || err != nil {
			b.Fatalf("took %d chunks, %v, %v", len(bufs), ev, err)
		}
		clear(bufs)
	}
}

// benchAttach attaches one client to a fake backend's shell; the registry
// is shut down when b ends.
func benchAttach(b *testing.B) (*fakeBackend, *Client) {
	fb := newFakeBackend()
	r, err := New(Config{Backend: fb})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
	})
	c, err := r.Attach(b.Context(), "web1", AttachOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return fb, c
}
