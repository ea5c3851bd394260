package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// A panic while adopting one instance's held session (the red team's
// hostile replay crashed the gateway at start-up, in AdoptAll's goroutine)
// is that instance's failure: AdoptAll goes on with the others, an attach
// gets an error, and the gateway stays up.
func TestAdoptPanicIsThatInstancesError(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("bad", "00cc", 0, "")
	hb.hold("good", "00dd", 0, "hello")
	hb.adoptPanics = map[string]bool{"bad": true}
	r := newHeldRegistry(t, Config{}, hb)
	if n := r.AdoptAll(context.Background()); n != 1 {
		t.Fatalf("adopted %d, want the good instance's session only", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := r.Attach(ctx, "bad", AttachOptions{}); err == nil || !strings.Contains(err.Error(), "internal error") {
		if c != nil {
			c.Detach()
		}
		t.Fatalf("attach to the bad instance: %v, want an internal error", err)
	}
	c := attach(t, r, "good", AttachOptions{})
	defer c.Detach()
	if got, _ := readAtLeast(t, c, 5); string(got) != "hello" {
		t.Fatalf("good instance's replay %q", got)
	}
}

// heldResetLoop has the holder of web1 announce n resets, each into the
// next session id, waiting for the client c (when set) to be moved by
// each; it returns how many resets c followed before it was closed.
func heldResetLoop(t *testing.T, hb *heldBackend, c *Client, n int) (followed int, cause error) {
	t.Helper()
	old := "0000"
	for i := range n {
		next := fmt.Sprintf("%04x", i+1)
		hb.mu.Lock()
		h := hb.holders["web1"]
		conn := h.conn
		hb.holders["web1"] = &fakeHolder{session: next, size: h.size}
		hb.mu.Unlock()
		if conn == nil {
			return followed, nil // nobody connected: nothing to tell
		}
		_ = conn.outW.CloseWithError(&ResetError{OldSession: old, NewSession: next, By: "another gateway"})
		old = next
		if c == nil {
			continue
		}
		_, ev, err := readUntil(t, c, 1<<30)
		if _, ok := ev.(*ResetError); !ok {
			return followed, err
		}
		followed++
	}
	return followed, nil
}

// A holder announcing resets in a loop (red team round 3, M3) is followed
// no faster than a client may reset (buckets.InstanceResets: 5, then one
// every 2 s): the clock stands still here, so after 5 the client is
// disconnected with ErrHolderResets and nothing more is adopted.
func TestHolderResetLoopIsRateLimited(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "0000", 0, "")
	r := newHeldRegistry(t, Config{Clock: clockwork.NewFakeClock()}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	followed, cause := heldResetLoop(t, hb, c, 50)
	if followed != 5 || !errors.Is(cause, ErrHolderResets) {
		t.Fatalf("followed %d resets, then %v; want 5, then ErrHolderResets", followed, cause)
	}
	if n := hb.adopts.Load(); n != 6 { // the attach's, and one per followed reset
		t.Fatalf("%d adoptions, want 6", n)
	}
	waitFor(t, func() bool { return len(r.Sessions()) == 0 })
}

// With no client attached, a reset the holder announces is not followed:
// nothing is adopted (no exec in the instance) until a client attaches,
// however many the holder announces.
func TestHolderResetWithoutClientsIsNotFollowed(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "0000", 0, "")
	r := newHeldRegistry(t, Config{}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	c.Detach() // the client leaves; the held session stays adopted
	waitFor(t, func() bool { s := r.Sessions(); return len(s) == 1 && s[0].Clients == 0 })
	before := hb.adopts.Load()
	if _, err := heldResetLoop(t, hb, nil, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(r.Sessions()) == 0 })
	time.Sleep(50 * time.Millisecond) // an adoption would have begun by now
	if n := hb.adopts.Load(); n != before {
		t.Fatalf("%d adoptions after the client left, want none", n-before)
	}
	// The next client adopts what the holder holds now.
	c = attach(t, r, "web1", AttachOptions{})
	defer c.Detach()
	if got := c.Info().Session; got != "0001" || hb.adopts.Load() != before+1 {
		t.Fatalf("attached to %q, want the holder's session 0001, adopted once", got)
	}
}

// The session a holder holds after announcing a reset must be the one it
// announced: otherwise the gateway takes nothing from it (the clients are
// told, the connection released and the shell left alone).
func TestHolderResetIntoAnotherSessionIsRefused(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "4e1d", 0, "")
	r := newHeldRegistry(t, Config{}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	hb.mu.Lock()
	hb.holders["web1"].session = "beef" // not what it announces below
	conn := hb.holders["web1"].conn
	hb.mu.Unlock()
	_ = conn.outW.CloseWithError(&ResetError{OldSession: "4e1d", NewSession: "f00d", By: "another gateway"})
	_, err := readErr(t, c)
	if err == nil || !strings.Contains(err.Error(), "announced a reset into session f00d") {
		t.Fatalf("client cause %v, want the refused reset", err)
	}
	last := hb.lastConn()
	if last == conn || !last.released.Load() || last.killCalled.Load() {
		t.Fatalf("the refused connection: released %v, killed %v; want released only", last.released.Load(), last.killCalled.Load())
	}
	if s := r.Sessions(); len(s) != 0 {
		t.Fatalf("sessions %+v, want none", s)
	}
}
