package sessions

import (
	"context"
	"errors"
	"fmt"
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
