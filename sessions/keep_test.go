package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// A keep postpones reaping past the idle timeout, up to MaxKeep, and Info
// says when the session will be reaped.
func TestKeepPostponesReaping(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{IdleTimeout: time.Minute, MaxKeep: time.Hour, Clock: clock})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	if in := find(r, "web1"); in.ReapAt != nil {
		t.Fatalf("reap_at %v while a client is attached", in.ReapAt)
	}
	ctx := context.Background()
	if _, err := r.Keep(ctx, "web1", 2*time.Hour); !errors.As(err, new(*KeepTooLongError)) {
		t.Fatalf("keep over MaxKeep: %v", err)
	}
	until, err := r.Keep(ctx, "web1", 10*time.Minute)
	if err != nil || !until.Equal(clock.Now().Add(10*time.Minute)) {
		t.Fatalf("keep: %v, %v", until, err)
	}
	c.Detach()
	if in := find(r, "web1"); in.ReapAt == nil || !in.ReapAt.Equal(until) || in.KeepUntil == nil {
		t.Fatalf("info %+v: reap_at should be the keep's end %v", in, until)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(waitCtx, 1); err != nil {
		t.Fatal("idle timer never armed")
	}
	clock.Advance(2 * time.Minute) // past the idle timeout
	if p.killCalled.Load() {
		t.Fatal("reaped at the idle timeout despite the keep")
	}
	// Ending the keep while idle: the idle timeout (already past) applies.
	if _, err := r.Keep(ctx, "web1", 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.killed:
	case <-waitCtx.Done():
		t.Fatal("not reaped once the keep ended")
	}
}

func TestKeepRefusedToObservers(t *testing.T) {
	r, _ := newTestRegistry(t, Config{})
	defer attach(t, r, "web1", AttachOptions{}).Detach() // observers watch, never start
	o := attach(t, r, "web1", AttachOptions{ReadOnly: true})
	defer o.Detach()
	if _, err := o.Keep(time.Hour); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("observer's keep: %v", err)
	}
	if _, err := r.Keep(context.Background(), "web2", time.Hour); !errors.Is(err, ErrNoSession) {
		t.Fatalf("keep without a session: %v", err)
	}
}

// A held session's holder owns its idle timer: while a keep needs it, the
// holder is told one client more, until the keep's end less the idle
// timeout, so that it reaps at about the keep's end.
func TestKeepOfAHeldSessionCountsForTheHolder(t *testing.T) {
	clock := clockwork.NewFakeClock()
	hb := newHeldBackend()
	hb.hold("web1", "feedc0de", 0, "$ ")
	r := newHeldRegistry(t, Config{IdleTimeout: time.Minute, Clock: clock}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	if _, err := r.Keep(context.Background(), "web1", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	c.Detach()
	conn := hb.lastConn()
	if got := conn.clientCounts(); got[len(got)-1] != 1 {
		t.Fatalf("holder told %v after the last client left a kept session, want 1 last", got)
	}
	clock.Advance(9*time.Minute + time.Second) // past the keep's end less the idle timeout
	waitFor(t, func() bool { got := conn.clientCounts(); return got[len(got)-1] == 0 })
	if in := find(r, "web1"); in == nil || in.ReapAt == nil {
		t.Fatalf("info %+v: want reap_at", in)
	}
}
