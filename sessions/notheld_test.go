package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// staleHolderBackend plays an instance whose holder's socket was deleted
// (issue 20, D3): Adopt finds no socket, and a start finds the holder's
// lock taken and nobody answering, which the backend reports as not held.
type staleHolderBackend struct{ *heldBackend }

func (b staleHolderBackend) Start(_ context.Context, inst Instance, _ StartSpec) (Process, error) {
	b.starts.Add(1)
	return nil, fmt.Errorf("instance %s: %w (stale socket /tmp/.termgate/holder.sock)", inst.Name, ErrNotHeld)
}

// An attach there used to go round for ever (no answer, no log line); it
// now fails after a few rounds with the backend's reason.
func TestAttachWhereNoHolderAnswersEnds(t *testing.T) {
	hb := newHeldBackend()
	r, err := New(Config{Backend: staleHolderBackend{hb}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, r) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = r.Attach(ctx, "web1", AttachOptions{})
	if err == nil || ctx.Err() != nil || !errors.Is(err, ErrNotHeld) {
		t.Fatalf("attach: %v (context: %v), want the backend's not-held error before the deadline", err, ctx.Err())
	}
	if n := hb.starts.Load(); n != maxNotHeldTries {
		t.Errorf("%d starts, want %d", n, maxNotHeldTries)
	}
}

// deafHolderBackend plays a holder that did not answer when Adopt looked
// (its socket deleted for a moment) and answered when the start found its
// lock taken: Start hands back the session the holder already holds.
type deafHolderBackend struct {
	*heldBackend
	deaf *atomic.Bool // Adopt finds no socket while set
}

func (b deafHolderBackend) Adopt(ctx context.Context, inst Instance, name string) (HeldProcess, error) {
	if b.deaf.Load() {
		return nil, fmt.Errorf("instance %s: %w", inst.Name, ErrNotHeld)
	}
	return b.heldBackend.Adopt(ctx, inst, name)
}

func (b deafHolderBackend) Start(_ context.Context, inst Instance, _ StartSpec) (Process, error) {
	b.starts.Add(1)
	b.deaf.Store(false) // it listens again
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.connectLocked(inst, inst.Name, b.holders[inst.Name]), nil
}

// A reset whose start lands in the session a holder already holds still
// ends in a fresh shell (never "reset" into the old one).
func TestResetIntoAHolderFoundByTheStartIsFresh(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "old", 0, "old output\n")
	deaf := &atomic.Bool{}
	deaf.Store(true)
	r, err := New(Config{Backend: deafHolderBackend{hb, deaf}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, r) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := r.Reset(ctx, "web1", "admin")
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	hb.mu.Lock()
	held := hb.holders["web1"].session
	hb.mu.Unlock()
	if s.ID() == "old" || held != s.ID() {
		t.Fatalf("reset landed in session %s, the holder holds %s; want a fresh session held by the holder", s.ID(), held)
	}
}
