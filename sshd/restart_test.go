package sshd

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// heldBackend makes a backend's shells durable (each a HeldProcess, as the
// Docker backend's are with --durable); nothing is held at start.
type heldBackend struct{ sessions.Backend }

func (b heldBackend) Start(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec) (sessions.Process, error) {
	p, err := b.Backend.Start(ctx, inst, spec)
	if err != nil {
		return nil, err
	}
	return heldProc{Process: p, id: spec.SessionID}, nil
}

func (b heldBackend) Adopt(context.Context, sessions.Instance, string) (sessions.HeldProcess, error) {
	return nil, sessions.ErrNotHeld
}

func (b heldBackend) HeldSessions(context.Context) ([]sessions.HeldSession, error) { return nil, nil }

type heldProc struct {
	sessions.Process
	id string
}

func (p heldProc) Held() sessions.HeldState                  { return sessions.HeldState{Session: p.id} }
func (p heldProc) Reset(ctx context.Context, _ string) error { return p.Kill(ctx) }
func (p heldProc) Clients(int)                               {}

// Release ends the local shell here (a real holder's shell keeps running).
func (p heldProc) Release() error { return p.Kill(context.Background()) }

// A durable session's SSH client is told, in one [termgate] line, that the
// gateway restarts and its session keeps running.
func TestShutdownTellsDurableClientsToReconnect(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) { c.Backend = heldBackend{c.Backend} })
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- f.srv.Shutdown(ctx) }()
	if err := f.reg.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(); code != 1 {
		t.Fatalf("attached client got status %d, want 1", code)
	}
	if got := a.errOut.String(); !strings.Contains(got, "[termgate] "+sessions.ErrRestart.Error()+"\r\n") || strings.Contains(got, "session ended") {
		t.Fatalf("attached client was told %q, want the one-line restart notice", got)
	}
	_ = a.client.Close()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-f.served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	f.served <- ErrServerClosed // for the fixture's cleanup
}

// list shows a DURABLE column when a session is durable.
func TestListShowsDurableSessions(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) { c.Backend = heldBackend{c.Backend} })
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	res := f.run(t, "admin", "me", "list")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if res.code != 0 || len(lines) < 2 || !regexp.MustCompile(`^INSTANCE +SESSION +CLIENTS +IDLE SINCE +BYTES +DURABLE$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^web1 +[0-9a-f]+ +1 +- +[0-9]+ +yes$`).MatchString(lines[1]) {
		t.Fatalf("list (status %d):\n%s", res.code, res.stdout)
	}
}
