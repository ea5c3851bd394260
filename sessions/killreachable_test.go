package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// After an engine outage the kill that failed during it is retried as soon
// as the backend reports it is reachable again, not at its next backoff (up
// to 15 s later), so the next attach gets a fresh shell at once.
func TestKillRetriedWhenBackendReachableAgain(t *testing.T) {
	clock := clockwork.NewFakeClock() // never advanced: the backoff never ends
	r, fb := newTestRegistry(t, Config{Clock: clock})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.killFails.Store(1) // the engine is down for the first attempt
	p.exit(0)
	if _, err := readErr(t, c); err == nil {
		t.Fatal("no cause after the shell exited")
	}
	s, _ := c.session()
	waitFor(t, func() bool { return s.killFailed.Load() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.Attach(ctx, "web1", AttachOptions{}); !errors.Is(err, ErrPreviousShellAlive) {
		t.Fatalf("attach while the kill is failing: %v, want ErrPreviousShellAlive", err)
	}

	<-fb.watchOn
	fb.mu.Lock()
	ev := fb.events
	fb.mu.Unlock()
	ev(InstanceEvent{Reachable: true}) // the backend's event stream reconnected

	// killFailed is cleared just after the kill succeeds.
	waitFor(t, func() bool { return p.killCalled.Load() && !s.killFailed.Load() })
	c2 := attach(t, r, "web1", AttachOptions{})
	defer c2.Detach()
	if !c2.Info().New || fb.starts.Load() != 2 || p.kills.Load() != 2 {
		t.Fatalf("after the backend came back: new=%v starts=%d kills=%d, want a new session, 2 starts, 2 kill attempts", c2.Info().New, fb.starts.Load(), p.kills.Load())
	}
}
