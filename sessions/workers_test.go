package sessions

import (
	"errors"
	"testing"
	"time"
)

// workersIdle reports whether the session runs neither a resizer nor an
// inputter (they run only while they have work).
func workersIdle(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.rz.resizing && !s.inq.inputting
}

func sessionOf(c *Client) *Session { s, _ := c.session(); return s }

func TestIdleSessionKeepsNoResizerOrInputter(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 80, Rows: 24}})
	p := fb.last()
	if _, err := c.Write([]byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	if err := c.Resize(Size{Cols: 120, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		sizes := append([]Size(nil), p.sizes...)
		p.mu.Unlock()
		if p.inputString() == "ls\r" && len(sizes) > 0 && sizes[len(sizes)-1] == (Size{Cols: 120, Rows: 40}) && workersIdle(sessionOf(c)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("input %q, sizes %v, workers idle %v: want the input and the resize applied, then no worker left",
				p.inputString(), sizes, workersIdle(sessionOf(c)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Work again after idling: a new worker starts.
	if _, err := c.Write([]byte("pwd\r")); err != nil {
		t.Fatal(err)
	}
	if got := p.inputString(); got != "ls\rpwd\r" {
		t.Fatalf("input %q, want both writes in order", got)
	}
}

func TestInputGivenUpOnDoesNotPileUp(t *testing.T) {
	r, fb := newTestRegistry(t, Config{InputTimeout: 20 * time.Millisecond})
	c := attach(t, r, "web1", AttachOptions{})
	fb.last().stuck.Store(true)
	for range 10 {
		if _, err := c.Write([]byte("typed into a stuck shell")); !errors.Is(err, ErrInputStalled) {
			t.Fatalf("write: %v, want ErrInputStalled", err)
		}
	}
	s := sessionOf(c)
	s.mu.Lock()
	n := len(s.inq.inputQ)
	s.mu.Unlock()
	if n > 1 {
		t.Fatalf("%d writes given up on still queued, want at most the last", n)
	}
}
