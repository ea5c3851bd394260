package sessions

import (
	"bytes"
	"sync"
	"testing"

	"github.com/termgate/termgate/internal/ring"
)

// echoReplayer answers every "?" in the output with "!" while no client is
// attached, and records what it saw, to test the session's side of the
// Replayer contract.
type echoReplayer struct {
	answer   func([]byte)
	attached int // session lock
	mu       sync.Mutex
	counts   []int
	closed   bool
	pending  chan []byte
	done     chan struct{}
}

func newEchoReplayer(_ *ring.Buffer, answer func([]byte)) *echoReplayer {
	r := &echoReplayer{answer: answer, pending: make(chan []byte, 16), done: make(chan struct{})}
	go func() { // answers off the session's lock, as Replayer asks
		defer close(r.done)
		for p := range r.pending {
			r.answer(p)
		}
	}()
	return r
}

func (r *echoReplayer) Write(p []byte) {
	if r.attached == 0 && bytes.Contains(p, []byte("?")) {
		r.pending <- []byte("!")
	}
}
func (r *echoReplayer) Resize(Size) {}
func (r *echoReplayer) Attached(n int) {
	r.attached = n
	r.mu.Lock()
	r.counts = append(r.counts, n)
	r.mu.Unlock()
}
func (r *echoReplayer) Replay() []byte { return []byte("snapshot") }
func (r *echoReplayer) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	close(r.pending)
	<-r.done
}

// A replayer is told who is attached, its answers reach the shell's input,
// its Replay is what a fresh attach gets, and it is closed with the session.
func TestReplayerAttachedAnswerClose(t *testing.T) {
	var rep *echoReplayer
	r, fb := newTestRegistry(t, Config{NewReplayer: func(ring *ring.Buffer, answer func([]byte)) Replayer {
		rep = newEchoReplayer(ring, answer)
		return rep
	}})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.emit("query? while attached\r\n")
	readAtLeast(t, c, 23)
	c.Detach()
	p.emit("query? while detached\r\n")
	waitFor(t, func() bool { return p.inputString() == "!" })
	c2 := attach(t, r, "web1", AttachOptions{})
	if b, _ := readAtLeast(t, c2, 8); string(b) != "snapshot" {
		t.Fatalf("a fresh attach got %q, want the replayer's snapshot", b)
	}
	c2.Detach()
	rep.mu.Lock()
	counts := append([]int(nil), rep.counts...)
	rep.mu.Unlock()
	if want := []int{1, 0, 1, 0}; !equalInts(counts, want) {
		t.Fatalf("Attached saw %v, want %v", counts, want)
	}
	if got := p.inputString(); got != "!" {
		t.Fatalf("shell input %q, want only the answer given while nobody was attached", got)
	}
	ss := r.live()
	if len(ss) != 1 {
		t.Fatalf("%d sessions, want 1", len(ss))
	}
	ss[0].Close(ErrIdle)
	ss[0].Wait()
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if !rep.closed {
		t.Fatal("the replayer was not closed with its session")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
