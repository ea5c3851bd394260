package sessions

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// lastSize is the size the backend applied last.
func lastSize(p *fakeProc) Size {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sizes) == 0 {
		return Size{}
	}
	return p.sizes[len(p.sizes)-1]
}

func waitBackendSize(t *testing.T, p *fakeProc, want Size) {
	t.Helper()
	waitFor(t, func() bool { return lastSize(p) == want })
}

// sizeEvents takes what is queued for c without waiting and returns the
// Resized events among it, in order.
func sizeEvents(c *Client) []Size {
	var out []Size
	var bufs [][]byte
	for range 64 {
		var ev Event
		bufs, ev, _ = c.Take(bufs[:0])
		if r, ok := ev.(*Resized); ok {
			out = append(out, r.Size)
			continue
		}
		if len(bufs) == 0 {
			return out
		}
	}
	return out
}

var (
	small = Size{Cols: 100, Rows: 30}
	big   = Size{Cols: 148, Rows: 41}
)

// The newcomer's bug (issue 23): a larger client joins, then leaves; the
// shell must go back to the size of the client still attached, and that
// client is told both changes.
func TestSizeFallsBackWhenTheLatestClientLeaves(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	a := attach(t, r, "web1", AttachOptions{Size: small})
	defer a.Detach()
	p := fb.last()
	b := attach(t, r, "web1", AttachOptions{Size: big})
	waitBackendSize(t, p, big)
	if got := b.Info().Size; got != big {
		t.Errorf("b attached at %v, want its own %v", got, big)
	}
	b.Detach()
	waitBackendSize(t, p, small)
	if got := sizeEvents(a); !slices.Equal(got, []Size{big, small}) {
		t.Errorf("a was told %v, want [%v %v]", got, big, small)
	}
	if info := r.Sessions()[0]; info.Size != "100x30" || info.SizePinned {
		t.Errorf("Info size %q pinned %v, want 100x30 unpinned", info.Size, info.SizePinned)
	}
}

// Typing makes a client the latest: its size is applied before its input.
func TestTypingTakesTheSizeBeforeTheInput(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	a := attach(t, r, "web1", AttachOptions{Size: small})
	defer a.Detach()
	p := fb.last()
	b := attach(t, r, "web1", AttachOptions{Size: big})
	defer b.Detach()
	waitBackendSize(t, p, big)
	if _, err := a.Write([]byte("stty size\n")); err != nil {
		t.Fatal(err)
	}
	ev := p.eventList()
	i := slices.Index(ev, "input stty size\n")
	if i < 1 || ev[i-1] != "resize 100x30" {
		t.Fatalf("backend saw %q: the resize to the typist's size must come right before its input", ev)
	}
	// b, typing next, takes it back; each is told when the size becomes
	// or stops being its own, so a page can fit its terminal again.
	if got := sizeEvents(b); !slices.Equal(got, []Size{small}) {
		t.Errorf("b was told %v, want [%v]", got, small)
	}
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitBackendSize(t, p, big)
	if got := sizeEvents(b); !slices.Equal(got, []Size{big}) {
		t.Errorf("b was told %v, want [%v]", got, big)
	}
	if got := sizeEvents(a); !slices.Equal(got, []Size{big, small, big}) {
		t.Errorf("a was told %v, want [%v %v %v]", got, big, small, big)
	}
}

// A client's own resize is never echoed back to it; observers never change
// the size, whatever they send, and are told of every change.
func TestResizeNotEchoedAndObserversNeverCount(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	a := attach(t, r, "web1", AttachOptions{Size: small})
	defer a.Detach()
	p := fb.last()
	o := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 300, Rows: 90}, ReadOnly: true})
	defer o.Detach()
	if err := o.Resize(Size{Cols: 200, Rows: 60}); err != nil {
		t.Fatal(err)
	}
	if err := a.Resize(big); err != nil {
		t.Fatal(err)
	}
	waitBackendSize(t, p, big)
	if got := sizeEvents(a); len(got) != 0 {
		t.Errorf("a was told %v about its own resize", got)
	}
	if got := sizeEvents(o); !slices.Equal(got, []Size{big}) {
		t.Errorf("observer was told %v, want [%v]", got, big)
	}
	o.Detach()
	a.Detach()
	for _, s := range p.sizes {
		if s.Cols >= 200 {
			t.Fatalf("an observer's size reached the backend: %v", p.sizes)
		}
	}
}

func TestSizePolicies(t *testing.T) {
	for _, tc := range []struct {
		policy SizePolicy
		want   Size
	}{
		{SizeSmallest, Size{Cols: 100, Rows: 24}},
		{SizeLargest, Size{Cols: 148, Rows: 41}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			r, fb := newTestRegistry(t, Config{SizePolicy: tc.policy})
			a := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 100, Rows: 41}})
			defer a.Detach()
			b := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 148, Rows: 24}})
			p := fb.last()
			waitBackendSize(t, p, tc.want)
			b.Detach()
			waitBackendSize(t, p, Size{Cols: 100, Rows: 41})
		})
	}
	if _, err := ParseSizePolicy("biggest"); err == nil {
		t.Error("ParseSizePolicy accepted biggest")
	}
}

// A pinned size holds whatever the clients do, until auto.
func TestPinnedSize(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	a := attach(t, r, "web1", AttachOptions{Size: small})
	defer a.Detach()
	p := fb.last()
	pin := Size{Cols: 120, Rows: 40}
	ctx := context.Background()
	if _, err := r.PinSize(ctx, "web1", pin); err != nil {
		t.Fatal(err)
	}
	waitBackendSize(t, p, pin)
	if info := r.Sessions()[0]; info.Size != "120x40" || !info.SizePinned {
		t.Errorf("Info size %q pinned %v, want 120x40 pinned", info.Size, info.SizePinned)
	}
	if err := a.Resize(big); err != nil {
		t.Fatal(err)
	}
	b := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 90, Rows: 20}})
	if got := b.Info().Size; got != pin {
		t.Errorf("attached at %v under a pin of %v", got, pin)
	}
	b.Detach()
	if info, err := r.Size(ctx, "web1"); err != nil || info.Size != pin || !info.Pinned {
		t.Fatalf("Size: %+v, %v; want %v pinned", info, err, pin)
	}
	// Told at the pin, and again when its own resize did not apply.
	if got := sizeEvents(a); !slices.Equal(got, []Size{pin, pin}) {
		t.Errorf("a was told %v, want [%v %v]", got, pin, pin)
	}
	if _, err := r.PinSize(ctx, "web1", Size{}); err != nil {
		t.Fatal(err)
	}
	waitBackendSize(t, p, big) // a's latest request
	if o := attach(t, r, "web1", AttachOptions{ReadOnly: true}); o.PinSize(pin) != ErrReadOnly {
		t.Error("an observer pinned the size")
	}
	if _, err := r.PinSize(ctx, "db1", pin); !errors.Is(err, ErrNoSession) {
		t.Errorf("pin of an instance without a session: %v, want ErrNoSession", err)
	}
}
