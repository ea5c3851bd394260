package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestRegistry(t *testing.T, cfg Config) (*Registry, *fakeBackend) {
	t.Helper()
	fb := newFakeBackend()
	cfg.Backend = fb
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return r, fb
}

func attach(t *testing.T, r *Registry, name string, opts AttachOptions) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := r.Attach(ctx, name, opts)
	if err != nil {
		t.Fatalf("attach %s: %v", name, err)
	}
	return c
}

// readUntil takes from c, as a listener does (Ready, Take), until it has
// n bytes, an in-band event (a reset) or the client's cause. It takes whole
// chunks, so nothing is left behind half read for the next call.
func readUntil(t *testing.T, c *Client, n int) ([]byte, Event, error) {
	t.Helper()
	type res struct {
		b   []byte
		ev  Event
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var out []byte
		var bufs [][]byte
		for len(out) < n {
			var ev Event
			var err error
			bufs, ev, err = c.Take(bufs[:0])
			for _, b := range bufs {
				out = append(out, b...)
			}
			if ev != nil || err != nil {
				ch <- res{out, ev, err}
				return
			}
			if len(bufs) == 0 {
				<-c.Ready()
			}
		}
		ch <- res{out, nil, nil}
	}()
	select {
	case r := <-ch:
		return r.b, r.ev, r.err
	case <-time.After(5 * time.Second):
		c.Detach() // unblocks the reader goroutine
		<-ch
		t.Fatalf("timed out waiting for %d bytes", n)
		return nil, nil, nil
	}
}

// stoppedAt is readAtLeast's error for an in-band event met before n
// bytes: the tests that read output expect none.
type stoppedAt struct{ ev Event }

func (e *stoppedAt) Error() string { return fmt.Sprintf("in-band event %T: %v", e.ev, e.ev) }

// readAtLeast reads until n bytes or the client's cause (see readUntil);
// an in-band event on the way is an error.
func readAtLeast(t *testing.T, c *Client, n int) ([]byte, error) {
	t.Helper()
	b, ev, err := readUntil(t, c, n)
	if ev != nil {
		return b, &stoppedAt{ev}
	}
	return b, err
}

// readErr drains c until it returns an error.
func readErr(t *testing.T, c *Client) ([]byte, error) {
	t.Helper()
	return readAtLeast(t, c, 1<<30)
}

// readEvent drains c until its next in-band event, which it returns; the
// end instead fails the test.
func readEvent[E Event](t *testing.T, c *Client) ([]byte, E) {
	t.Helper()
	b, ev, err := readUntil(t, c, 1<<30)
	e, ok := ev.(E)
	if !ok {
		var want E
		t.Fatalf("read ended with event %v, cause %v after %q; want a %T", ev, err, b, want)
	}
	return b, e
}

func TestConcurrentFirstAttachesShareOneShell(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	var wg sync.WaitGroup
	clients := make(chan *Client, 20)
	for range 20 {
		wg.Go(func() {
			c, err := r.Attach(context.Background(), "web1", AttachOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			clients <- c
		})
	}
	wg.Wait()
	close(clients)
	ids, news := map[string]bool{}, 0
	for c := range clients {
		ids[c.Info().Session] = true
		if c.Info().New {
			news++
		}
	}
	if got := fb.starts.Load(); got != 1 {
		t.Fatalf("20 concurrent attaches started %d shells, want 1", got)
	}
	if len(ids) != 1 || news != 1 {
		t.Fatalf("sessions %v, %d attaches marked new; want one session, one new", ids, news)
	}
}

func TestReplayThenLiveForEveryClient(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c1 := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.emit("before\r\n")
	if b, _ := readAtLeast(t, c1, 8); string(b) != "before\r\n" {
		t.Fatalf("c1 got %q", b)
	}
	c2 := attach(t, r, "web1", AttachOptions{})
	if c2.Info().New || c2.Info().Offset != 8 || c2.Info().Replay != 8 {
		t.Fatalf("second attach info %+v, want joined at offset 8", c2.Info())
	}
	p.emit("after\r\n")
	if b, _ := readAtLeast(t, c2, 15); string(b) != "before\r\nafter\r\n" {
		t.Fatalf("c2 got %q, want replay then live", b)
	}
	if b, _ := readAtLeast(t, c1, 7); string(b) != "after\r\n" {
		t.Fatalf("c1 got %q", b)
	}
	c1.Write([]byte("ls\r"))
	c2.Write([]byte("pwd\r"))
	if got := p.inputString(); got != "ls\rpwd\r" {
		t.Fatalf("shell input %q", got)
	}
}

func TestResumeFromOffset(t *testing.T) {
	r, fb := newTestRegistry(t, Config{BufferSize: MinBufferSize})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.emit("one\r\ntwo\r\n")
	readAtLeast(t, c, 10)
	c.Detach()
	p.emit("three\r\n")
	waitBytes(t, r, 17)

	c = attach(t, r, "web1", AttachOptions{Session: c.Info().Session, Since: 10})
	if b, _ := readAtLeast(t, c, 7); string(b) != "three\r\n" || c.Info().Gap || c.Info().Offset != 17 {
		t.Fatalf("resume got %q info %+v; want only the missed bytes", b, c.Info())
	}
	id := c.Info().Session
	c.Detach()

	// Push the resume point out of the ring: the normal replay and a gap.
	p.emit(strings.Repeat("x", MinBufferSize) + "\r\nlast\r\n")
	waitBytes(t, r, 17+MinBufferSize+8)
	c = attach(t, r, "web1", AttachOptions{Session: id, Since: 10})
	if !c.Info().Gap {
		t.Fatalf("info %+v: want gap", c.Info())
	}
	if b, _ := readAtLeast(t, c, 6); !bytes.HasSuffix(b, []byte("last\r\n")) || bytes.Contains(b, []byte("three")) {
		t.Fatalf("gap replay %q", b)
	}
	c.Detach()

	// A stale session id: the current session's normal replay.
	c = attach(t, r, "web1", AttachOptions{Session: "0000", Since: 3})
	if c.Info().Gap || c.Info().Session != id {
		t.Fatalf("stale resume info %+v", c.Info())
	}
	c.Detach()
}

func TestSlowClientIsDroppedWithoutStallingOthers(t *testing.T) {
	r, fb := newTestRegistry(t, Config{BufferSize: MinBufferSize, ClientQueue: MinBufferSize})
	slow := attach(t, r, "web1", AttachOptions{Label: "slow"})
	fast := attach(t, r, "web1", AttachOptions{Label: "fast"})
	p := fb.last()
	chunk := strings.Repeat("y", 1024)
	for i := range 100 { // paced by the fast reader: only the slow one lags
		p.emit(chunk)
		if b, err := readAtLeast(t, fast, 1024); err != nil || len(b) != 1024 {
			t.Fatalf("chunk %d: fast client got %d bytes, %v", i, len(b), err)
		}
	}
	if _, err := readErr(t, slow); !errors.Is(err, ErrSlowClient) {
		t.Fatalf("slow client error %v, want ErrSlowClient", err)
	}
	if got := r.Sessions()[0].Clients; got != 1 {
		t.Fatalf("clients = %d after the slow one was dropped, want 1", got)
	}
}

func TestIdleSessionIsReapedAttachedOneIsNot(t *testing.T) {
	clock := clockwork.NewFakeClock()
	ended := make(chan error, 1)
	r, fb := newTestRegistry(t, Config{IdleTimeout: time.Minute, Clock: clock, OnEnd: func(in Info, cause error) {
		if in.Instance == "idle" {
			ended <- cause
		}
	}})
	idle := attach(t, r, "idle", AttachOptions{})
	pIdle := fb.last()
	busy := attach(t, r, "busy", AttachOptions{})
	pBusy := fb.last()
	idle.Detach()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("idle timer never armed")
	}
	if s := find(r, "idle"); s == nil || s.IdleSince == nil {
		t.Fatalf("idle session info %+v, want idle_since set", s)
	}
	clock.Advance(59 * time.Second)
	if pIdle.killCalled.Load() {
		t.Fatal("reaped before the timeout")
	}
	clock.Advance(2 * time.Second)
	select {
	case <-pIdle.killed:
	case <-ctx.Done():
		t.Fatal("idle session not reaped")
	}
	clock.Advance(time.Hour)
	if pBusy.killCalled.Load() {
		t.Fatal("a session with a client attached was reaped")
	}
	waitFor(t, func() bool { return find(r, "idle") == nil })
	if cause := <-ended; !errors.Is(cause, ErrIdle) {
		t.Fatalf("OnEnd cause %v, want ErrIdle", cause)
	}
	if find(r, "busy") == nil {
		t.Fatal("busy session missing")
	}
	busy.Detach()
}

func TestResetMovesClientsToFreshSession(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 120, Rows: 40}, Term: "screen"})
	oldID := c.Info().Session
	old := fb.last()
	old.emit("old output\r\n")
	readAtLeast(t, c, 12)
	s, err := r.Reset(context.Background(), "web1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !old.killCalled.Load() {
		t.Fatal("reset did not kill the old shell")
	}
	_, re := readEvent[*ResetError](t, c)
	if re.NewSession != s.ID() || re.OldSession != oldID || re.By != "alice" || c.Info().Session != s.ID() {
		t.Fatalf("client event %v, want a ResetError naming %s", re, s.ID())
	}
	fresh := fb.last()
	if fresh == old || fresh.spec.Size != (Size{Cols: 120, Rows: 40}) || fresh.spec.Term != "screen" {
		t.Fatalf("fresh shell size %+v TERM %q, want the old session's", fresh.spec.Size, fresh.spec.Term)
	}
	c2 := attach(t, r, "web1", AttachOptions{})
	if c2.Info().Session != s.ID() || c2.Info().New {
		t.Fatalf("reattach info %+v", c2.Info())
	}
	fresh.emit("new\r\n")
	if b, _ := readAtLeast(t, c2, 5); string(b) != "new\r\n" {
		t.Fatalf("after reset got %q; the replay must start empty", b)
	}
	c2.Detach()
}

func TestShellExitEndsSessionWithCode(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.emit("bye\r\n")
	p.exit(3)
	b, err := readErr(t, c)
	var ee *ExitError
	if string(b) != "bye\r\n" || !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("got %q, %v; want the output then exit status 3", b, err)
	}
	waitFor(t, func() bool { return len(r.Sessions()) == 0 })
	if !p.killCalled.Load() {
		t.Fatal("background jobs of an exited shell must be killed too")
	}
}

func TestInstanceGoneEndsSession(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	<-fb.watchOn
	fb.events(InstanceEvent{Instance: Instance{Name: "web1", ID: "id-web1"}, Gone: true})
	if _, err := readErr(t, c); !errors.Is(err, ErrInstanceGone) {
		t.Fatalf("cause %v, want ErrInstanceGone", err)
	}
}

func TestAttachRefusesBadNamesAndUnknownInstances(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	fb.missing["nope"] = true
	for _, name := range []string{"", "../etc", "a/b", "-x", strings.Repeat("a", 129), "web 1"} {
		if _, err := r.Attach(context.Background(), name, AttachOptions{}); !errors.Is(err, ErrBadName) {
			t.Errorf("Attach(%q) = %v, want ErrBadName", name, err)
		}
	}
	if _, err := r.Attach(context.Background(), "nope", AttachOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Attach(nope) = %v, want ErrNotFound", err)
	}
	if fb.starts.Load() != 0 {
		t.Fatal("a refused attach started a shell")
	}
}

func TestResizePolicyLatestWins(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c1 := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 100, Rows: 30}})
	p := fb.last()
	if p.spec.Size != (Size{Cols: 100, Rows: 30}) {
		t.Fatalf("start size %+v", p.spec.Size)
	}
	c2 := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 80, Rows: 20}})
	if err := c1.Resize(Size{Cols: 100000, Rows: 100000}); !errors.Is(err, ErrBadSize) {
		t.Fatalf("absurd resize: %v", err)
	}
	if err := c1.Resize(Size{Cols: 132, Rows: 50}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.sizes) > 0 && p.sizes[len(p.sizes)-1] == Size{Cols: 132, Rows: 50}
	})
	c3 := attach(t, r, "web1", AttachOptions{}) // size unknown: keeps 132x50
	if got := find(r, "web1"); got == nil {
		t.Fatal("session gone")
	}
	for _, c := range []*Client{c1, c2, c3} {
		c.Detach()
	}
}

func TestNewRefusesSmallBuffer(t *testing.T) {
	_, err := New(Config{Backend: newFakeBackend(), BufferSize: 4096})
	if err == nil || !strings.Contains(err.Error(), "10KiB") {
		t.Fatalf("New with a 4 KiB buffer: %v", err)
	}
}

func TestShutdownEndsEverySession(t *testing.T) {
	fb := newFakeBackend()
	r, err := New(Config{Backend: fb})
	if err != nil {
		t.Fatal(err)
	}
	c := attach(t, r, "a", AttachOptions{})
	attach(t, r, "b", AttachOptions{}).Detach()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Done not closed after Shutdown")
	}
	for _, p := range fb.procs {
		if !p.killCalled.Load() {
			t.Fatalf("shell in %s not killed at shutdown", p.inst.Name)
		}
	}
	if _, err := readErr(t, c); !errors.Is(err, ErrShutdown) {
		t.Fatalf("cause %v, want ErrShutdown", err)
	}
	if _, err := r.Attach(ctx, "a", AttachOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("attach after shutdown: %v", err)
	}
}

func find(r *Registry, name string) *Info {
	for _, in := range r.Sessions() {
		if in.Instance == name {
			return &in
		}
	}
	return nil
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type listingBackend struct {
	*fakeBackend
	names []string
}

func (b listingBackend) List(context.Context) ([]Instance, error) {
	var out []Instance
	for _, n := range b.names {
		out = append(out, Instance{Name: n, ID: "id-" + n})
	}
	return out, nil
}

func TestInstancesListsBackendAndSessionsFiltered(t *testing.T) {
	fb := newFakeBackend()
	r, err := New(Config{Backend: listingBackend{fb, []string{"web1", "web2", "db1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	c := attach(t, r, "web2", AttachOptions{})
	defer c.Detach()
	list, err := r.Instances(context.Background(), func(n string) bool { return strings.HasPrefix(n, "web") })
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "web1" || list[0].Session != nil || list[1].Name != "web2" || list[1].Session == nil || list[1].Session.Clients != 1 {
		t.Fatalf("Instances = %+v", list)
	}
}

// waitBytes waits until the pump has delivered n bytes: emit returns once
// the pump has read them, not once they are in the ring.
func waitBytes(t *testing.T, r *Registry, n int64) {
	t.Helper()
	waitFor(t, func() bool {
		s := r.Sessions()
		return len(s) == 1 && s[0].BytesOut >= n
	})
}

// A backend says how its shell ended; a stream that ends without saying
// (a bare io.EOF) ends the session with ErrBackendLost, even while the
// instance stops: the registry no longer guesses (the backends tell a
// signal exit from an instance's stop).
func TestBareEndIsBackendLost(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	fb.mu.Lock()
	fb.missing["web1"] = true
	fb.mu.Unlock()
	_ = fb.last().outW.Close()
	if _, err := readErr(t, c); !errors.Is(err, ErrBackendLost) {
		t.Fatalf("cause %v, want ErrBackendLost", err)
	}

	c = attach(t, r, "web2", AttachOptions{})
	fb.last().exit(137) // kill -9 $$ inside a running instance, as told
	var ee *ExitError
	if _, err := readErr(t, c); !errors.As(err, &ee) || ee.Code != 137 {
		t.Fatalf("cause %v, want exit status 137", err)
	}
}

// A terminal stream that breaks (the Docker engine restarted) ends the
// session with ErrBackendLost, and the next attach starts a fresh shell.
func TestBrokenStreamEndsSessionAsBackendLost(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	old := fb.last()
	_ = old.outW.CloseWithError(errors.New("connection reset by peer"))
	if _, err := readErr(t, c); !errors.Is(err, ErrBackendLost) {
		t.Fatalf("cause %v, want ErrBackendLost", err)
	}
	waitFor(t, func() bool { return len(r.Sessions()) == 0 })
	c2 := attach(t, r, "web1", AttachOptions{})
	defer c2.Detach()
	if !c2.Info().New || fb.last() == old {
		t.Fatalf("attach after the loss %+v: want a new session", c2.Info())
	}
}

// An instance's "session" is its default session only; "sessions" has
// them all, named ones included (the page's list and tabs).
func TestInstancesListsNamedSessions(t *testing.T) {
	fb := newFakeBackend()
	r, err := New(Config{Backend: listingBackend{fb, []string{"web1", "web2", "db1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	for _, addr := range []string{"web1+build", "web2", "web2+logs"} {
		c := attach(t, r, addr, AttachOptions{})
		defer c.Detach()
	}
	list, err := r.Instances(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]InstanceInfo{}
	for _, in := range list {
		got[in.Name] = in
	}
	names := func(in InstanceInfo) (out []string) {
		for _, s := range in.Sessions {
			out = append(out, s.Name)
		}
		return out
	}
	if w1 := got["web1"]; w1.Session != nil || len(w1.Sessions) != 1 || w1.Sessions[0].Name != "build" {
		t.Errorf("web1 (only a named session): session %+v, sessions %q; want none and [build]", w1.Session, names(w1))
	}
	if w2 := got["web2"]; w2.Session == nil || w2.Session.Name != "" || len(w2.Sessions) != 2 {
		t.Errorf("web2: session %+v, sessions %q; want the default one and two", w2.Session, names(w2))
	}
	if db := got["db1"]; db.Session != nil || db.Sessions == nil || len(db.Sessions) != 0 {
		t.Errorf("db1 (no session): session %+v, sessions %#v; want none and an empty list", db.Session, db.Sessions)
	}
}
