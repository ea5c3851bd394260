package sessions

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// holdResizes makes p's next resizes wait until the returned release is
// called (the test's cleanup calls it too).
func holdResizes(t *testing.T, p *fakeProc) (entered <-chan struct{}, release func()) {
	t.Helper()
	gate, in := make(chan struct{}), make(chan struct{}, 8)
	p.mu.Lock()
	p.resizeGate, p.resizeEntered = gate, in
	p.mu.Unlock()
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	return in, release
}

func writeAsync(c *Client, s string) <-chan error {
	res := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte(s))
		res <- err
	}()
	return res
}

// A client that resizes and then types (`stty size`) must have the shell see
// the new size: the input waits for the resize asked for before it.
func TestInputWaitsForEarlierResize(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 80, Rows: 24}})
	defer c.Detach()
	p := fb.last()
	entered, release := holdResizes(t, p)
	if err := c.Resize(Size{Cols: 132, Rows: 50}); err != nil {
		t.Fatal(err)
	}
	<-entered // the engine is applying the size
	res := writeAsync(c, "stty size\n")
	// Give a wrong implementation time to let the input overtake.
	var err error
	select {
	case err = <-res:
		t.Errorf("input written while the resize before it was still being applied: %q", p.eventList())
	case <-time.After(300 * time.Millisecond):
		release()
		err = <-res
	}
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	want := []string{"resize 132x50", "input stty size\n"}
	if got := p.eventList(); !slices.Equal(got, want) {
		t.Fatalf("backend saw %q, want %q", got, want)
	}
}

// An engine that never finishes a resize must not hold input for longer than
// resizeOrderWait: the keystrokes go in at the old size.
func TestInputGoesOnWhenResizeHangs(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock})
	c := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 80, Rows: 24}})
	defer c.Detach()
	p := fb.last()
	entered, _ := holdResizes(t, p)
	if err := c.Resize(Size{Cols: 132, Rows: 50}); err != nil {
		t.Fatal(err)
	}
	<-entered
	res := writeAsync(c, "ls\n")
	s, _ := c.session()
	// The inputter waits (its timer is set before it waits)...
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.rz.resizedCh != nil
	})
	if got := p.inputString(); got != "" {
		t.Fatalf("input %q written before the wait ended", got)
	}
	// ... until resizeOrderWait has passed, well before InputTimeout.
	clock.Advance(resizeOrderWait)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("write: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("input still held by a hung resize after resizeOrderWait")
	}
	if got := p.eventList(); !slices.Equal(got, []string{"input ls\n"}) {
		t.Fatalf("backend saw %q, want only the input", got)
	}
}
