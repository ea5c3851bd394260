package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/termgate/termgate/internal/ring"
)

// redrawReplayer is a Redrawer whose "screen" names the offset it was
// taken at, so a test can tell which output it stands for.
type redrawReplayer struct {
	ring  *ring.Buffer
	pad   *atomic.Int64 // extra bytes per redraw (a snapshot too large)
	snaps *atomic.Int32
}

func (redrawReplayer) Write([]byte) {}
func (redrawReplayer) Resize(Size)  {}
func (redrawReplayer) Attached(int) {}
func (redrawReplayer) Close()       {}
func (redrawReplayer) Prepare()     {}
func (r redrawReplayer) Replay() []byte {
	r.snaps.Add(1)
	return fmt.Appendf(nil, "[screen@%d]%s", r.ring.End(), strings.Repeat("p", int(r.pad.Load())))
}

func redrawConfig(cfg Config) (Config, *atomic.Int64, *atomic.Int32) {
	pad, snaps := new(atomic.Int64), new(atomic.Int32)
	cfg.NewReplayer = func(rg *ring.Buffer, _ func([]byte)) Replayer { return redrawReplayer{rg, pad, snaps} }
	return cfg, pad, snaps
}

// block returns the i-th 1 KiB block of output: every byte says which
// block it is part of, so a byte given twice or out of place shows.
func block(i int) string {
	return strings.Repeat(fmt.Sprintf("<%06d>", i), 1024/8)
}

// A client that stops reading falls behind without holding its backlog,
// and is brought forward atomically when it reads again: it gets the
// bytes before, one Skipped event whose offset and byte count add up, the
// screen at that offset, then exactly the output from it on. One
// snapshot in all, taken when it reads; a client that reads is untouched;
// the slow one's queue never passes its bound.
func TestSkipBringsASlowClientForwardAtomically(t *testing.T) {
	cfg, _, snaps := redrawConfig(Config{BufferSize: 16 << 10, ClientQueue: 16 << 10})
	r, fb := newTestRegistry(t, cfg)
	slow := attach(t, r, "web1", AttachOptions{})
	fast := attach(t, r, "web1", AttachOptions{})
	for _, c := range []*Client{slow, fast} {
		if _, err := readAtLeast(t, c, c.Info().Replay); err != nil {
			t.Fatal(err)
		}
	}
	p := fb.last()
	var all, fastGot, slowGot bytes.Buffer
	emit := func(i int) {
		b := block(i)
		all.WriteString(b)
		p.emit(b)
		got, err := readAtLeast(t, fast, len(b))
		if err != nil {
			t.Fatalf("the reading client: %v", err)
		}
		fastGot.Write(got)
	}
	for i := range 3 {
		emit(i)
	}
	got, err := readAtLeast(t, slow, 3*1024)
	if err != nil {
		t.Fatal(err)
	}
	slowGot.Write(got)
	before := snaps.Load() // the attaches' replays
	for i := 3; i < 60; i++ {
		emit(i)
		slow.mu.Lock()
		q := slow.queued
		slow.mu.Unlock()
		if q > cfg.ClientQueue {
			t.Fatalf("the slow client queues %d bytes, over its bound %d", q, cfg.ClientQueue)
		}
	}
	if n := snaps.Load() - before; n != 0 {
		t.Fatalf("%d snapshots while the client did not read, want none", n)
	}
	_, sk := readEvent[*Skipped](t, slow)
	if sk.Offset != int64(all.Len()) || sk.Offset-sk.Bytes != int64(slowGot.Len()) {
		t.Fatalf("skipped %+v: want offset %d (all the output) and offset - bytes = what the client took, %d", sk, all.Len(), slowGot.Len())
	}
	redraw, err := readAtLeast(t, slow, sk.Replay)
	want := "\x18" + fmt.Sprintf("[screen@%d]", sk.Offset)
	if err != nil || string(redraw) != want || len(redraw) != sk.Replay {
		t.Fatalf("after the skip: %q, %v; want the redraw %q (%d bytes)", redraw, err, want, sk.Replay)
	}
	// Subscribed again: the output from the offset on, exactly.
	for i := 60; i < 63; i++ {
		emit(i)
	}
	rest, err := readAtLeast(t, slow, 3*1024)
	if err != nil || !bytes.Equal(rest, all.Bytes()[sk.Offset:]) {
		t.Fatalf("after the redraw: %d bytes, %v; want exactly the %d from offset %d on", len(rest), err, all.Len()-int(sk.Offset), sk.Offset)
	}
	if !bytes.Equal(fastGot.Bytes(), all.Bytes()) {
		t.Fatalf("the reading client got %d bytes, want all %d in order", fastGot.Len(), all.Len())
	}
	if n := snaps.Load() - before; n != 1 {
		t.Fatalf("%d snapshots, want one", n)
	}
	if slow.Cause() != nil {
		t.Fatalf("the slow client was closed: %v", slow.Cause())
	}
}

// A reset while a client is behind moves it as ever: the reset event and
// the fresh session's replay, no skip.
func TestSkipThenResetMovesTheClient(t *testing.T) {
	cfg, _, _ := redrawConfig(Config{BufferSize: 16 << 10, ClientQueue: 16 << 10})
	r, fb := newTestRegistry(t, cfg)
	c := attach(t, r, "web1", AttachOptions{})
	for i := range 20 {
		fb.last().emit(block(i))
	}
	waitBehind(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.Reset(ctx, "web1", "test"); err != nil {
		t.Fatal(err)
	}
	_, reset := readEvent[*ResetError](t, c)
	replay, err := readAtLeast(t, c, reset.Attach.Replay)
	if err != nil || string(replay) != "[screen@0]" {
		t.Fatalf("after the reset: %q, %v; want the fresh session's replay", replay, err)
	}
}

// waitBehind waits until c fell behind.
func waitBehind(t *testing.T, c *Client) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		behind := c.skip.behind
		c.mu.Unlock()
		if behind {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the client did not fall behind")
		}
	}
}

// In-band events queued before a skip (a pause notice) are kept, before
// the Skipped event.
func TestSkipKeepsEarlierEvents(t *testing.T) {
	cfg, _, _ := redrawConfig(Config{BufferSize: 16 << 10, ClientQueue: 16 << 10})
	r, fb := newTestRegistry(t, cfg)
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.emit(block(0))
	s, _ := c.session()
	s.setPaused(true)
	for i := 1; i < 20; i++ {
		p.emit(block(i))
	}
	waitBehind(t, c)
	readEvent[*Notice](t, c) // first, or the test fails
	if _, sk := readEvent[*Skipped](t, c); sk.Offset != sk.Bytes {
		t.Fatalf("second event %v (%+v), want a skip of everything (the replay aside)", sk, sk)
	}
}

// A redraw larger than the queue, and a client that took nothing for
// StuckTimeout after a skip, are dropped as too slow.
func TestSkipFallsBackToDropping(t *testing.T) {
	t.Run("redraw too large", func(t *testing.T) {
		cfg, pad, _ := redrawConfig(Config{BufferSize: 16 << 10, ClientQueue: 16 << 10})
		r, fb := newTestRegistry(t, cfg)
		c := attach(t, r, "web1", AttachOptions{})
		pad.Store(16 << 10)
		for i := range 20 {
			fb.last().emit(block(i))
		}
		if _, err := readErr(t, c); !errors.Is(err, ErrSlowClient) {
			t.Fatalf("%v, want ErrSlowClient", err)
		}
		if n := r.Sessions()[0].Clients; n != 0 {
			t.Fatalf("%d clients after the drop, want 0", n)
		}
	})
	t.Run("stuck", func(t *testing.T) {
		clock := clockwork.NewFakeClock()
		cfg, _, _ := redrawConfig(Config{BufferSize: 16 << 10, ClientQueue: 16 << 10, Clock: clock, StuckTimeout: time.Minute})
		r, fb := newTestRegistry(t, cfg)
		c := attach(t, r, "web1", AttachOptions{})
		for i := range 20 {
			fb.last().emit(block(i))
		}
		waitBehind(t, c)
		if c.Cause() != nil {
			t.Fatalf("closed as it fell behind: %v", c.Cause())
		}
		clock.Advance(time.Minute)
		fb.last().emit(block(20)) // a minute behind, and still output
		if _, err := readErr(t, c); !errors.Is(err, ErrSlowClient) {
			t.Fatalf("%v, want ErrSlowClient", err)
		}
	})
}

// A held session's clients are brought forward too: the offsets are the
// holder's.
func TestSkipInAHeldSession(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "feedc0de", 5000, "$ ")
	cfg, _, _ := redrawConfig(Config{BufferSize: 16 << 10, ClientQueue: 16 << 10})
	r := newHeldRegistry(t, cfg, hb)
	c := attach(t, r, "web1", AttachOptions{})
	replay, err := readAtLeast(t, c, c.Info().Replay)
	if err != nil || !strings.HasPrefix(string(replay), "[screen@5002]") {
		t.Fatalf("replay %q, %v", replay, err)
	}
	for i := range 20 {
		hb.print("web1", block(i))
	}
	if _, sk := readEvent[*Skipped](t, c); sk.Offset-sk.Bytes != 5002 {
		t.Fatalf("%v (%+v), want a skip from offset 5002", sk, sk)
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1 KB", 999_499: "999 KB", 999_500: "1.0 MB", 9_949_999: "9.9 MB", 25_554_182: "26 MB"} {
		if got := SizeString(n); got != want {
			t.Errorf("SizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
