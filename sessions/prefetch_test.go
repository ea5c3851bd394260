package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// prefetch runs a prefetched lookup of name to the end, as a listener's
// goroutine would.
func prefetch(r *Registry, name string) *Prefetch {
	p, run := r.Prefetch(context.Background(), name)
	run()
	return p
}

// An attach with a fresh prefetched lookup of its instance does not ask
// the backend again (the SSH listener starts the lookup when the client
// has authenticated, so the round trip overlaps the client's channel, PTY
// and shell requests).
func TestAttachUsesPrefetchedLookup(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	p := prefetch(r, "web")
	before := fb.lookups.Load()
	c := attach(t, r, "web", AttachOptions{Prefetch: p})
	defer c.Detach()
	if n := fb.lookups.Load() - before; n != 0 {
		t.Errorf("the attach looked the instance up %d more times despite the prefetch", n)
	}
	if got := c.Info().Instance; got != "web" {
		t.Errorf("attached to %q", got)
	}
	// A prefetch of another name is not used.
	c2 := attach(t, r, "db", AttachOptions{Prefetch: p})
	defer c2.Detach()
	if n := fb.lookups.Load() - before; n != 1 {
		t.Errorf("attach to db with web's prefetch: %d lookups, want 1", n)
	}
}

// A prefetch is trusted only while fresh and only when it found the
// instance: an instance gone since a stale prefetch is refused, and one
// that appeared since a failed prefetch is attached.
func TestAttachDoesNotTrustStaleOrFailedPrefetch(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock})
	p := prefetch(r, "web")
	clock.Advance(prefetchTTL + time.Millisecond)
	fb.mu.Lock()
	fb.missing["web"] = true
	fb.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := r.Attach(ctx, "web", AttachOptions{Prefetch: p}); !errors.Is(err, ErrNotFound) {
		if c != nil {
			c.Detach()
		}
		t.Fatalf("attach after a stale prefetch to an instance now gone: %v, want not found", err)
	}
	failed := prefetch(r, "web")
	fb.mu.Lock()
	delete(fb.missing, "web")
	fb.mu.Unlock()
	c := attach(t, r, "web", AttachOptions{Prefetch: failed})
	c.Detach()
}

// An attach waits for a prefetch still under way, and gives up with its
// own context.
func TestAttachWaitsForPrefetch(t *testing.T) {
	r, _ := newTestRegistry(t, Config{})
	p, run := r.Prefetch(context.Background(), "web")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Attach(ctx, "web", AttachOptions{Prefetch: p}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("attach with a prefetch that never ran: %v, want the context's deadline", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); run() }()
	c := attach(t, r, "web", AttachOptions{Prefetch: p})
	c.Detach()
	<-done
}
