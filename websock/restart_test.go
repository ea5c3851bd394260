package websock

import (
	"context"
	"sync"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

// heldBackend makes fakeBackend's shells durable: each is a HeldProcess,
// as the Docker backend's are with --durable. Nothing is held at start.
type heldBackend struct{ *fakeBackend }

func (b heldBackend) Start(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec) (sessions.Process, error) {
	p, err := b.fakeBackend.Start(ctx, inst, spec)
	if err != nil {
		return nil, err
	}
	return heldProc{fakeProc: p.(*fakeProc), id: spec.SessionID}, nil
}

func (b heldBackend) Adopt(context.Context, sessions.Instance, string) (sessions.HeldProcess, error) {
	return nil, sessions.ErrNotHeld
}

func (b heldBackend) HeldSessions(context.Context) ([]sessions.HeldSession, error) { return nil, nil }

type heldProc struct {
	*fakeProc
	id string
}

func (p heldProc) Held() sessions.HeldState { return sessions.HeldState{Session: p.id} }
func (p heldProc) Reset(ctx context.Context, _ string) error {
	return p.Kill(ctx)
}

// Release ends the fake's stream (a real holder's shell keeps running).
func (p heldProc) Release() error { return p.Kill(context.Background()) }
func (p heldProc) Clients(int)    {}

// A gateway shutting down closes a durable session's WebSockets with 1012
// "service restart" and says the session keeps running, whichever of the
// listener and the registry tells the client first; an ordinary session's
// get 1001.
func TestShutdownWithDurableSessionsIs1012(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listener bool // the listener's Shutdown runs (as in the gateway), not only the registry's
	}{{"registry", false}, {"gateway", true}} {
		t.Run(tc.name, func(t *testing.T) {
			be := newFakeBackend("held", "plain")
			e := newEnv(t, heldBackend{be}, nil, nil)
			d, _ := e.attach("/api/instances/held/terminal")
			// The plain instance's backend: an ordinary shell beside it.
			e2 := newEnv(t, newFakeBackend("plain"), nil, nil)
			p, _ := e2.attach("/api/instances/plain/terminal")

			var wg sync.WaitGroup
			for _, env := range []*env{e, e2} {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), waitFor)
					defer cancel()
					if tc.listener {
						_ = env.srv.Shutdown(ctx)
					}
					_ = env.reg.Shutdown(ctx)
				})
			}
			if ev := d.event("error"); ev.Message != sessions.ErrRestart.Error() {
				t.Errorf("durable session's client got %+v, want the restart notice", ev)
			}
			if code := d.closeCode(); code != websocket.CloseServiceRestart {
				t.Errorf("durable session's client: close %d, want 1012", code)
			}
			if code := p.closeCode(); code != websocket.CloseGoingAway {
				t.Errorf("ordinary session's client: close %d, want 1001", code)
			}
			wg.Wait()
		})
	}
}
