package sessions

import (
	"context"
	"errors"
	"testing"
)

// events takes what is queued for c without waiting and returns the
// in-band events among it, in order.
func events(c *Client) []Event {
	var out []Event
	var bufs [][]byte
	for range 4096 {
		var ev Event
		bufs, ev, _ = c.Take(bufs[:0])
		if ev != nil {
			out = append(out, ev)
			continue
		}
		if len(bufs) == 0 {
			return out
		}
	}
	return out
}

func countOf[T Event](evs []Event) int {
	n := 0
	for _, e := range evs {
		if _, ok := e.(T); ok {
			n++
		}
	}
	return n
}

// An observer's hand, raised a thousand times, reaches the writers once;
// a grant lets that person's observer client type until a reset.
func TestRaiseHandAndGrant(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	w := attach(t, r, "web1", AttachOptions{Who: "alice", Via: "ssh"})
	defer w.Detach()
	o := attach(t, r, "web1", AttachOptions{Who: "bob", Via: "websocket", ReadOnly: true})
	defer o.Detach()
	p := fb.last()
	if _, err := o.Write([]byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("observer's write: %v", err)
	}
	for range 1000 {
		if err := o.RaiseHand(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.RaiseHand(); !errors.Is(err, ErrNotObserver) {
		t.Errorf("writer's hand: %v", err)
	}
	if evs := events(w); countOf[*HandRaised](evs) != 1 {
		t.Fatalf("the writer got %v, want one raised hand", evs)
	}
	who, err := r.Who(context.Background(), "web1")
	if err != nil || len(who) != 2 || !who[1].Hand || !who[1].ReadOnly {
		t.Fatalf("Who: %+v, %v", who, err)
	}
	if _, err := o.Grant("alice"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("an observer granted: %v", err)
	}
	if _, err := w.Grant("carol"); !errors.As(err, new(*NoObserverError)) {
		t.Errorf("grant to nobody: %v", err)
	}
	if n, err := w.Grant("bob"); n != 1 || err != nil {
		t.Fatalf("grant: %d, %v", n, err)
	}
	if evs := events(o); countOf[*Granted](evs) != 1 {
		t.Fatalf("the observer got %v, want one grant", evs)
	}
	if _, err := o.Write([]byte("granted\n")); err != nil {
		t.Fatalf("granted write: %v", err)
	}
	waitFor(t, func() bool { return p.inputString() == "granted\n" })
	who, _ = r.Who(context.Background(), "web1")
	if !who[1].Granted || who[1].ReadOnly || who[1].Hand || who[1].LastInput == nil {
		t.Fatalf("Who after the grant: %+v", who[1])
	}
	// A reset ends the grant.
	if _, err := r.Reset(context.Background(), "web1", "alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !o.granted.Load() }) // moved to the fresh session
	if _, err := o.Write([]byte("y")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write after a reset: %v, want ErrReadOnly", err)
	}
}

// With NotifyJoins, clients hear of joins and leaves; without, nothing.
func TestNotifyJoins(t *testing.T) {
	for _, on := range []bool{true, false} {
		r, _ := newTestRegistry(t, Config{NotifyJoins: on})
		a := attach(t, r, "web1", AttachOptions{Who: "alice", Via: "ssh"})
		b := attach(t, r, "web1", AttachOptions{Who: "bob", Via: "websocket", ReadOnly: true})
		b.Detach()
		evs := events(a)
		want := 0
		if on {
			want = 2
		}
		if n := countOf[*Presence](evs); n != want {
			t.Errorf("NotifyJoins %v: %d presence events %v, want %d", on, n, evs, want)
		}
		if on && evs[0].String() != "bob via websocket joined (read-only)" {
			t.Errorf("join event %q", evs[0].String())
		}
		a.Detach()
	}
}
