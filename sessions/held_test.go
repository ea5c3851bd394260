package sessions

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// An attach adopts the holder's session: its ID, numbering, replay, size
// and creation time are the holder's, the attach is not "new", and no
// shell is started.
func TestAttachAdoptsTheHeldSession(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "feedc0de", 5000, "$ echo hi\r\nhi\r\n$ ")
	r := newHeldRegistry(t, Config{}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	info := c.Info()
	if info.Session != "feedc0de" || info.New || info.Offset != 5000+17 || info.Gap {
		t.Fatalf("attach info %+v; want the held session feedc0de at offset 5017, not new", info)
	}
	if b, _ := readAtLeast(t, c, info.Replay); !strings.Contains(string(b), "hi\r\n$ ") {
		t.Fatalf("replay %q; want the holder's", b)
	}
	hb.print("web1", "live")
	if b, _ := readAtLeast(t, c, 4); string(b) != "live" {
		t.Fatalf("live output %q", b)
	}
	if hb.starts.Load() != 0 {
		t.Fatalf("%d shells started; an adopted session starts none", hb.starts.Load())
	}
	s := r.Sessions()[0]
	if !s.Durable || s.Session != "feedc0de" || !s.Created.Equal(time.Unix(1700000000, 0)) || s.BytesOut != 5021 {
		t.Fatalf("session info %+v; want durable, the holder's ID, creation time and numbering", s)
	}
	c.Write([]byte("ls\r"))
	if got := hb.lastConn().inputString(); got != "ls\r" {
		t.Fatalf("holder got input %q", got)
	}
}

// A WebSocket client resuming with session and since from before a
// gateway restart gets exactly the bytes it missed, including what the
// shell printed while no gateway ran.
func TestResumeAcrossARestartGetsExactlyTheMissedBytes(t *testing.T) {
	hb := newHeldBackend()
	hb.startHeld = true
	r1 := newHeldRegistry(t, Config{BufferSize: MinBufferSize}, hb)
	c := attach(t, r1, "web1", AttachOptions{})
	if !c.Durable() {
		t.Fatal("a shell the backend holds: the client's session is not durable")
	}
	id := c.Info().Session
	hb.print("web1", "one\r\n")
	if b, _ := readAtLeast(t, c, 5); string(b) != "one\r\n" {
		t.Fatalf("got %q", b)
	}
	since := c.Info().Offset + 5
	hb.print("web1", "two\r\n") // the client may or may not read it before the restart
	waitFor(t, func() bool { return r1.Sessions()[0].BytesOut == 10 })
	shutdown(t, r1)
	if _, err := readErr(t, c); !errors.Is(err, ErrRestart) {
		t.Fatalf("client cause %v, want ErrRestart", err)
	}
	conn := hb.lastConn()
	if !conn.released.Load() || conn.killCalled.Load() {
		t.Fatalf("shutdown: released %v, killed %v; want the held shell released, not killed", conn.released.Load(), conn.killCalled.Load())
	}

	hb.print("web1", "three\r\n") // no gateway runs: the holder keeps it
	r2 := newHeldRegistry(t, Config{BufferSize: MinBufferSize}, hb)
	c = attach(t, r2, "web1", AttachOptions{Session: id, Since: since})
	if c.Info().Session != id || c.Info().Gap || c.Info().Offset != 17 {
		t.Fatalf("resume info %+v; want session %s, no gap, offset 17", c.Info(), id)
	}
	if b, _ := readAtLeast(t, c, 12); string(b) != "two\r\nthree\r\n" {
		t.Fatalf("resume got %q, want exactly the missed bytes", b)
	}
	hb.print("web1", "four")
	if b, _ := readAtLeast(t, c, 4); string(b) != "four" {
		t.Fatalf("live after resume %q", b)
	}
	if hb.starts.Load() != 1 {
		t.Fatalf("%d shells started, want 1 (the restart adopts it)", hb.starts.Load())
	}
}

// Reset of a held session asks the holder for the fresh shell (never
// Kill), and the registry adopts the holder's new session.
func TestResetOfAHeldSessionResetsThroughTheHolder(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "0ld0", 0, "old output")
	r := newHeldRegistry(t, Config{}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	old := hb.lastConn()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess, err := r.Reset(ctx, "web1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, reset := readEvent[*ResetError](t, c); reset.NewSession != sess.ID() || reset.By != "alice" {
		t.Fatalf("client event %v; want a reset to %s by alice", reset, sess.ID())
	}
	if ids := old.resetIDs(); !slices.Equal(ids, []string{sess.ID()}) || old.killCalled.Load() || !old.released.Load() {
		t.Fatalf("holder resets %v, killed %v, released %v; want one Reset(%s), no Kill, released", ids, old.killCalled.Load(), old.released.Load(), sess.ID())
	}
	if hb.starts.Load() != 0 || !sess.Info().Durable {
		t.Fatalf("starts %d, durable %v: the fresh session must be the holder's", hb.starts.Load(), sess.Info().Durable)
	}
	c = attach(t, r, "web1", AttachOptions{})
	if c.Info().Session != sess.ID() || strings.Contains(string(mustRead(t, c)), "old output") {
		t.Fatalf("after the reset the attach landed in %s", c.Info().Session)
	}
}

// A reset from a gateway that has not adopted the held session (another
// gateway's) resets it through the holder too.
func TestResetOfANotYetAdoptedHeldSession(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "0ther", 0, "")
	r := newHeldRegistry(t, Config{}, hb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess, err := r.Reset(ctx, "web1", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if sess.ID() == "0ther" {
		t.Fatal("the reset adopted the old session instead of resetting it")
	}
	first := hb.conns[0]
	if ids := first.resetIDs(); !slices.Equal(ids, []string{sess.ID()}) || first.killCalled.Load() {
		t.Fatalf("holder resets %v, killed %v", ids, first.killCalled.Load())
	}
}

// Shutdown leaves held shells to their holders (clients told ErrRestart)
// and ends the others as before.
func TestShutdownReleasesHeldSessionsAndKillsOthers(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("held", "4e1d", 0, "")
	r := newHeldRegistry(t, Config{}, hb)
	ch := attach(t, r, "held", AttachOptions{})
	co := attach(t, r, "plain", AttachOptions{}) // no holder: an ordinary shell
	if co.Durable() || !ch.Durable() {
		t.Fatalf("durable: held %v, plain %v", ch.Durable(), co.Durable())
	}
	plain := hb.last()
	shutdown(t, r)
	if _, err := readErr(t, ch); !errors.Is(err, ErrRestart) {
		t.Fatalf("held client cause %v, want ErrRestart", err)
	}
	if _, err := readErr(t, co); !errors.Is(err, ErrShutdown) {
		t.Fatalf("plain client cause %v, want ErrShutdown", err)
	}
	held := hb.lastConn()
	if held.killCalled.Load() || !held.released.Load() {
		t.Fatalf("held shell: killed %v, released %v", held.killCalled.Load(), held.released.Load())
	}
	if !plain.killCalled.Load() {
		t.Fatal("the ordinary shell was not killed")
	}
}

// When the holder itself ends the stream (other than by a reset: see
// TestHeldResetByAnotherGatewayMovesClients), its clients get its cause and
// the registry releases the connection, never kills the shell: the holder
// reaped it; a lost connection leaves the shell running. A shell that
// exits is cleaned up with Kill. A stream that ends without a cause is
// ErrBackendLost (the shell is left to its holder), even while the instance
// stops; a cause the backend gives is final (even a signal exit while the
// instance stops: the backend tells those apart).
func TestHolderEndedStream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		end   error
		check func(error) bool
		kill  bool
		gone  bool // the instance stops
	}{
		{"reaped", ErrIdle, func(err error) bool { return errors.Is(err, ErrIdle) }, false, false},
		{"bare end", io.EOF, func(err error) bool { return errors.Is(err, ErrBackendLost) }, false, false},
		{"shell exited", &ExitError{Code: 3}, func(err error) bool {
			var e *ExitError
			return errors.As(err, &e) && e.Code == 3
		}, true, false},
		{"bare end while the instance stops", io.EOF, func(err error) bool { return errors.Is(err, ErrBackendLost) }, false, true},
		{"holder says the instance stopped", ErrInstanceGone, func(err error) bool { return errors.Is(err, ErrInstanceGone) }, true, false},
		// The backend's account is final: telling a shell killed as its
		// instance stopped from one killed inside it is the backend's job
		// (backend/docker: TestEndCauseFromTheEngine), not the core's.
		{"signal exit as told", &ExitError{Code: 137}, func(err error) bool {
			var e *ExitError
			return errors.As(err, &e) && e.Code == 137
		}, true, true},
		{"holder connection lost as told", ErrHolderLost, func(err error) bool { return errors.Is(err, ErrHolderLost) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hb := newHeldBackend()
			hb.hold("web1", "4e1d", 0, "")
			r := newHeldRegistry(t, Config{}, hb)
			c := attach(t, r, "web1", AttachOptions{})
			conn := hb.lastConn()
			if tc.gone {
				hb.fakeBackend.mu.Lock()
				hb.missing["web1"] = true
				hb.fakeBackend.mu.Unlock()
			}
			hb.end("web1", tc.end)
			if _, err := readErr(t, c); !tc.check(err) {
				t.Fatalf("client cause %v", err)
			}
			waitFor(t, func() bool { return len(r.Sessions()) == 0 })
			if conn.killCalled.Load() != tc.kill || conn.released.Load() == tc.kill {
				t.Fatalf("killed %v, released %v; want killed %v", conn.killCalled.Load(), conn.released.Load(), tc.kill)
			}
		})
	}
}

// The gateway arms no idle timer for a held session: it tells the holder
// its client count at every change, and the holder reaps.
func TestHeldSessionIdleIsTheHoldersJob(t *testing.T) {
	clock := clockwork.NewFakeClock()
	hb := newHeldBackend()
	hb.hold("web1", "4e1d", 0, "")
	r := newHeldRegistry(t, Config{Clock: clock, IdleTimeout: time.Minute}, hb)
	c1 := attach(t, r, "web1", AttachOptions{})
	c2 := attach(t, r, "web1", AttachOptions{})
	c1.Detach()
	c2.Detach()
	clock.Advance(time.Hour)
	time.Sleep(20 * time.Millisecond)
	s := r.Sessions()
	if len(s) != 1 || s[0].IdleSince == nil {
		t.Fatalf("sessions %+v: the held session must stay (idle) until its holder reaps it", s)
	}
	if got := hb.lastConn().clientCounts(); !slices.Equal(got, []int{0, 1, 2, 1, 0}) {
		t.Fatalf("Clients calls %v, want [0 1 2 1 0]", got)
	}
}

// A holder that exists but cannot be adopted fails the attach and starts
// nothing beside it.
func TestAdoptErrorStartsNothing(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "4e1d", 0, "")
	hb.adoptErr = errors.New("holder speaks protocol 9")
	r := newHeldRegistry(t, Config{}, hb)
	_, err := r.Attach(context.Background(), "web1", AttachOptions{})
	if err == nil || !strings.Contains(err.Error(), "protocol 9") {
		t.Fatalf("attach error %v; want the adoption's", err)
	}
	if hb.starts.Load() != 0 || len(r.Sessions()) != 0 {
		t.Fatalf("starts %d, sessions %d: nothing may start beside a held shell", hb.starts.Load(), len(r.Sessions()))
	}
}

// A starting gateway adopts every held session before anyone attaches.
func TestAdoptAllListsHeldSessions(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("a", "aaaa", 10, "x")
	hb.hold("b", "bbbb", 20, "y")
	r := newHeldRegistry(t, Config{}, hb)
	if n := r.AdoptAll(context.Background()); n != 2 {
		t.Fatalf("AdoptAll adopted %d, want 2", n)
	}
	s := r.Sessions()
	if len(s) != 2 || !s[0].Durable || !s[1].Durable || s[0].Clients != 0 {
		t.Fatalf("sessions %+v", s)
	}
	c := attach(t, r, "a", AttachOptions{})
	if c.Info().Session != "aaaa" || hb.adopts.Load() != 2 {
		t.Fatalf("attach landed in %s after %d adoptions; want the adopted aaaa", c.Info().Session, hb.adopts.Load())
	}
	// Nothing held, or a backend that holds nothing: AdoptAll adopts nothing.
	r2, fb := newTestRegistry(t, Config{})
	if n := r2.AdoptAll(context.Background()); n != 0 || fb.starts.Load() != 0 {
		t.Fatalf("AdoptAll on a plain backend: %d, %d starts", n, fb.starts.Load())
	}
}

// A starting gateway's background work adopts instance by instance: a
// held session is adopted, an instance holding none gets no session, and a
// second adoption of the same instance leaves the first alone.
func TestAdoptInAdoptsOneInstance(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("a", "aaaa", 10, "x")
	r := newHeldRegistry(t, Config{}, hb)
	ctx := context.Background()
	if ok, err := r.AdoptIn(ctx, Instance{Name: "a", ID: "id-a"}); !ok || err != nil {
		t.Fatalf("AdoptIn(a) = %v, %v; want adopted", ok, err)
	}
	if ok, err := r.AdoptIn(ctx, Instance{Name: "a", ID: "id-a"}); ok || err != nil {
		t.Fatalf("second AdoptIn(a) = %v, %v; want nothing done", ok, err)
	}
	if ok, err := r.AdoptIn(ctx, Instance{Name: "b", ID: "id-b"}); ok || err != nil {
		t.Fatalf("AdoptIn(b), nothing held = %v, %v", ok, err)
	}
	if s := r.Sessions(); len(s) != 1 || s[0].Session != "aaaa" || hb.starts.Load() != 0 {
		t.Fatalf("sessions %+v, %d starts; want aaaa alone, nothing started", s, hb.starts.Load())
	}
}

func mustRead(t *testing.T, c *Client) []byte {
	t.Helper()
	if c.Info().Replay == 0 {
		return nil
	}
	b, _ := readAtLeast(t, c, c.Info().Replay)
	return b
}

// A holder that cannot reset the session: the user asked for the shell to
// go, so it is killed, and the reset starts a fresh one.
func TestHeldResetFailureKillsTheShell(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "0ld0", 0, "")
	r := newHeldRegistry(t, Config{}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	old := hb.lastConn()
	hb.resetErr = errors.New("holder busy")
	hb.mu.Lock()
	delete(hb.holders, "web1") // the kill ends the holder's session
	hb.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess, err := r.Reset(ctx, "web1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !old.killCalled.Load() || sess.ID() == "0ld0" || hb.starts.Load() != 1 {
		t.Fatalf("killed %v, new session %s, starts %d; want the old shell killed and a fresh one", old.killCalled.Load(), sess.ID(), hb.starts.Load())
	}
	readEvent[*ResetError](t, c) // or the test fails
}

// An attach that waits for AdoptAll's adoption of an instance the holder
// no longer holds starts a shell instead of failing.
func TestAttachDuringAdoptAllOfANotHeldInstance(t *testing.T) {
	hb := newHeldBackend()
	hb.listed = []string{"web1"} // listed, but its holder is gone by now
	hb.adoptGate = make(chan struct{})
	r := newHeldRegistry(t, Config{}, hb)
	adopted := make(chan int, 1)
	go func() { adopted <- r.AdoptAll(context.Background()) }()
	waitFor(t, func() bool { return hb.adopts.Load() == 1 })
	attached := make(chan error, 1)
	go func() {
		c, err := r.Attach(context.Background(), "web1", AttachOptions{})
		if err == nil {
			c.Detach()
		}
		attached <- err
	}()
	time.Sleep(20 * time.Millisecond) // the attach waits on AdoptAll's slot
	close(hb.adoptGate)
	if n := <-adopted; n != 0 {
		t.Fatalf("AdoptAll adopted %d, want 0", n)
	}
	if err := <-attached; err != nil {
		t.Fatalf("attach: %v; want a shell started", err)
	}
	if hb.starts.Load() != 1 {
		t.Fatalf("%d shells started, want 1", hb.starts.Load())
	}
}
