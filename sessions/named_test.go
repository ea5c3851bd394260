package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// findAddr is the live session at addr (INSTANCE or INSTANCE+NAME).
func findAddr(r *Registry, addr string) *Info {
	a, _ := ParseAddr(addr)
	for _, in := range r.Sessions() {
		if in.Instance == a.Instance && in.Name == a.Name {
			return &in
		}
	}
	return nil
}

// Two named sessions of one instance and its default one are three
// shells: each its own output, and a reset of one leaves the others.
func TestNamedSessionsAreIndependent(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	def := attach(t, r, "web1", AttachOptions{})
	pDef := fb.last()
	build := attach(t, r, "web1+build", AttachOptions{})
	pBuild := fb.last()
	logs := attach(t, r, "web1+logs", AttachOptions{})
	pLogs := fb.last()
	if fb.starts.Load() != 3 || pBuild.spec.Name != "build" || pLogs.spec.Name != "logs" || pDef.spec.Name != "" {
		t.Fatalf("%d starts, names %q %q %q; want three shells named '', build, logs", fb.starts.Load(), pDef.spec.Name, pBuild.spec.Name, pLogs.spec.Name)
	}
	if build.Info().Session == def.Info().Session || build.Info().Session == logs.Info().Session {
		t.Fatal("named sessions share a session id")
	}
	pBuild.emit("make\r\n")
	pLogs.emit("tail\r\n")
	pDef.emit("root\r\n")
	for c, want := range map[*Client]string{def: "root\r\n", build: "make\r\n", logs: "tail\r\n"} {
		if b, _ := readAtLeast(t, c, len(want)); string(b) != want {
			t.Fatalf("got %q, want %q: output crossed sessions", b, want)
		}
	}
	// A second attach to +build joins it, with its replay only.
	again := attach(t, r, "web1+build", AttachOptions{})
	if again.Info().Session != build.Info().Session || again.Info().New {
		t.Fatalf("reattach %+v, want the build session", again.Info())
	}
	if b, _ := readAtLeast(t, again, 6); string(b) != "make\r\n" {
		t.Fatalf("replay %q, want the build session's", b)
	}
	again.Detach()

	s, err := r.Reset(context.Background(), "web1+build", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "build" || !pBuild.killCalled.Load() {
		t.Fatalf("reset session %q, build killed %v", s.Name(), pBuild.killCalled.Load())
	}
	if pDef.killCalled.Load() || pLogs.killCalled.Load() {
		t.Fatal("a reset of web1+build killed another session's shell")
	}
	if _, re := readEvent[*ResetError](t, build); re.NewSession != s.ID() {
		t.Fatalf("build client moved to %s, want %s", re.NewSession, s.ID())
	}
	if in := findAddr(r, "web1+build"); in == nil || in.Session != s.ID() || in.Name != "build" {
		t.Fatalf("list after reset: %+v", in)
	}
	if in := findAddr(r, "web1"); in == nil || in.Session != def.Info().Session || in.Name != "" {
		t.Fatalf("default session after the named reset: %+v", in)
	}
	// Each sized and kept on its own.
	if _, err := r.PinSize(context.Background(), "web1+logs", Size{Cols: 100, Rows: 30}); err != nil {
		t.Fatal(err)
	}
	if si, _ := r.Size(context.Background(), "web1"); si.Pinned {
		t.Fatal("pinning web1+logs pinned the default session")
	}
	if _, err := r.Keep(context.Background(), "web1+nosuch", time.Hour); !errors.Is(err, ErrNoSession) {
		t.Fatalf("keep of a session that does not exist: %v, want ErrNoSession", err)
	}
	if msg := NoSessionMessage("web1+nosuch"); msg != `instance "web1" has no session "nosuch"; attach first (ssh -t web1+nosuch@HOST)` {
		t.Fatalf("message %q", msg)
	}
	def.Detach()
	build.Detach()
	logs.Detach()
}

// An idle named session is reaped on its own; the default one with a
// client stays. An instance that stops ends all its sessions.
func TestNamedSessionReapedAloneAndInstanceStopEndsAll(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{IdleTimeout: time.Minute, Clock: clock})
	def := attach(t, r, "web1", AttachOptions{})
	pDef := fb.last()
	idle := attach(t, r, "web1+idle", AttachOptions{})
	pIdle := fb.last()
	idle.Detach()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("idle timer never armed")
	}
	clock.Advance(2 * time.Minute)
	select {
	case <-pIdle.killed:
	case <-ctx.Done():
		t.Fatal("idle named session not reaped")
	}
	waitFor(t, func() bool { return findAddr(r, "web1+idle") == nil })
	if pDef.killCalled.Load() || findAddr(r, "web1") == nil {
		t.Fatal("the default session went with the idle named one")
	}

	other := attach(t, r, "web1+other", AttachOptions{})
	<-fb.watchOn
	fb.events(InstanceEvent{Instance: Instance{Name: "web1", ID: "id-web1"}, Gone: true})
	for _, c := range []*Client{def, other} {
		if _, err := readErr(t, c); !errors.Is(err, ErrInstanceGone) {
			t.Fatalf("cause %v, want ErrInstanceGone for every session of the instance", err)
		}
	}
}

// Past --max-sessions-per-instance (the default session counted) a new
// session is refused, and so is a credential's named session past its
// cap across instances; joining an existing one is not.
func TestSessionCaps(t *testing.T) {
	r, fb := newTestRegistry(t, Config{MaxPerInstance: 3, MaxNamedPerWho: 3})
	var cs []*Client
	for _, a := range []string{"web1", "web1+a", "web1+b"} {
		cs = append(cs, attach(t, r, a, AttachOptions{Who: "alice"}))
	}
	_, err := r.Attach(context.Background(), "web1+c", AttachOptions{Who: "alice"})
	var tooMany *TooManySessionsError
	if !errors.As(err, &tooMany) || tooMany.Instance != "web1" || tooMany.Max != 3 {
		t.Fatalf("fourth session: %v, want the instance's cap", err)
	}
	if _, err := r.Reset(context.Background(), "web1+c", "bob"); !errors.As(err, &tooMany) {
		t.Fatalf("a reset that would start a fourth session: %v, want the cap", err)
	}
	cs = append(cs, attach(t, r, "web1+a", AttachOptions{Who: "bob"})) // joining is fine
	starts := fb.starts.Load()
	// alice has two named sessions; one more anywhere, then refused.
	cs = append(cs, attach(t, r, "web2+x", AttachOptions{Who: "alice"}))
	_, err = r.Attach(context.Background(), "web3+y", AttachOptions{Who: "alice"})
	if !errors.As(err, &tooMany) || tooMany.Who != "alice" || tooMany.Instance != "" {
		t.Fatalf("alice's fourth named session: %v, want her cap", err)
	}
	cs = append(cs, attach(t, r, "web3", AttachOptions{Who: "alice"}))   // a default session is not capped per credential
	cs = append(cs, attach(t, r, "web3+y", AttachOptions{Who: "carol"})) // another credential may
	if got := fb.starts.Load(); got != starts+3 {
		t.Fatalf("%d shells started, want %d: a refused attach must start nothing", got, starts+3)
	}
	if tooMany.Error() == "" || (&TooManySessionsError{Instance: "web1", Max: 3}).Error() == "" {
		t.Fatal("empty refusal")
	}
	for _, c := range cs {
		c.Detach()
	}
}

func TestParseAddrRefusesBadNames(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Addr
		err  error
	}{
		{"web1", Addr{"web1", ""}, nil},
		{"web1+build", Addr{"web1", "build"}, nil},
		{"web1+a-b_9", Addr{"web1", "a-b_9"}, nil},
		{"web1+", Addr{}, ErrBadSessionName},
		{"web1+Build", Addr{}, ErrBadSessionName},
		{"web1+-x", Addr{}, ErrBadSessionName},
		{"web1+a.b", Addr{}, ErrBadSessionName},
		{"web1+a+b", Addr{}, ErrBadSessionName},
		{"web1+" + strings.Repeat("a", 33), Addr{}, ErrBadSessionName},
		{"web1+" + strings.Repeat("a", 32), Addr{"web1", strings.Repeat("a", 32)}, nil},
		{"+build", Addr{}, ErrBadName},
		{"we b+x", Addr{}, ErrBadName},
	} {
		got, err := ParseAddr(tt.in)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("ParseAddr(%q) = %+v, %v; want %+v, %v", tt.in, got, err, tt.want, tt.err)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), tt.in)
		}
	}
	r, fb := newTestRegistry(t, Config{})
	for _, bad := range []string{"web1+", "web1+UP", "web1+a/b"} {
		if _, err := r.Attach(context.Background(), bad, AttachOptions{}); !errors.Is(err, ErrBadSessionName) {
			t.Errorf("attach %q: %v, want ErrBadSessionName", bad, err)
		}
		if _, err := r.Reset(context.Background(), bad, "x"); !errors.Is(err, ErrBadSessionName) {
			t.Errorf("reset %q: %v, want ErrBadSessionName", bad, err)
		}
	}
	if fb.lookups.Load() != 0 {
		t.Fatal("a bad name reached the backend")
	}
}
