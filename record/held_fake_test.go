package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// heldBackend is a sessions backend whose one instance, web1, has a holder
// (a fake of the holder program, after sessions/held_fake_test.go): it
// keeps the session's output with its byte numbers across gateways, the
// last keep bytes of it, as a replay ring does.
type heldBackend struct {
	mu      sync.Mutex
	session string
	offset  int64  // the number of out[0]
	out     []byte // the holder's ring
	keep    int
	size    sessions.Size // the terminal's (zero: 100x30)
	conn    *heldConn     // the gateway's connection, if any
}

func newHeldBackend(session string, keep int) *heldBackend {
	return &heldBackend{session: session, keep: keep}
}

// print is output of the held shell: the holder keeps it and sends it to
// the connected gateway, if any. When print returns, the gateway's pump
// has read it.
func (b *heldBackend) print(s string) {
	b.mu.Lock()
	b.out = append(b.out, s...)
	if over := len(b.out) - b.keep; over > 0 {
		b.out = slices.Clone(b.out[over:])
		b.offset += int64(over)
	}
	conn := b.conn
	b.mu.Unlock()
	if conn != nil {
		_, _ = conn.outW.Write([]byte(s))
	}
}

func (b *heldBackend) Lookup(_ context.Context, name string) (sessions.Instance, error) {
	if name != "web1" {
		return sessions.Instance{}, sessions.ErrNotFound
	}
	return sessions.Instance{Name: name, ID: "id-" + name}, nil
}

func (b *heldBackend) Start(context.Context, sessions.Instance, sessions.StartSpec) (sessions.Process, error) {
	return nil, errors.New("the fake only holds")
}

func (b *heldBackend) Watch(ctx context.Context, _ func(sessions.InstanceEvent)) error {
	<-ctx.Done()
	return nil
}

func (b *heldBackend) Sweep(context.Context) error { return nil }
func (b *heldBackend) Ping(context.Context) error  { return nil }

func (b *heldBackend) Adopt(_ context.Context, inst sessions.Instance, name string) (sessions.HeldProcess, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if inst.Name != "web1" || name != "" {
		return nil, fmt.Errorf("%s: %w", inst.Name, sessions.ErrNotHeld)
	}
	size := b.size
	if size == (sessions.Size{}) {
		size = sessions.Size{Cols: 100, Rows: 30}
	}
	c := &heldConn{b: b, state: sessions.HeldState{Session: b.session, Created: time.Unix(1700000000, 0),
		Offset: b.offset, Replay: slices.Clone(b.out), Size: size}}
	c.outR, c.outW = io.Pipe()
	b.conn = c
	return c, nil
}

func (b *heldBackend) HeldSessions(context.Context) ([]sessions.HeldSession, error) {
	return []sessions.HeldSession{{Instance: sessions.Instance{Name: "web1", ID: "id-web1"}}}, nil
}

// heldConn is one gateway's connection to the holder.
type heldConn struct {
	b         *heldBackend
	state     sessions.HeldState
	outR      *io.PipeReader
	outW      *io.PipeWriter
	closeOnce sync.Once
}

func (c *heldConn) Read(p []byte) (int, error)                  { return c.outR.Read(p) }
func (c *heldConn) Write(p []byte) (int, error)                 { return len(p), nil }
func (c *heldConn) Resize(context.Context, sessions.Size) error { return nil }
func (c *heldConn) Wait(context.Context) (int, error)           { return 0, nil }
func (c *heldConn) Held() sessions.HeldState                    { return c.state }
func (c *heldConn) Reset(context.Context, string) error         { return errors.New("the fake does not reset") }
func (c *heldConn) Clients(int)                                 {}
func (c *heldConn) Kill(context.Context) error                  { c.drop(errors.New("killed")); return nil }
func (c *heldConn) Release() error                              { c.drop(io.ErrClosedPipe); return nil }

func (c *heldConn) drop(err error) {
	c.b.mu.Lock()
	if c.b.conn == c {
		c.b.conn = nil
	}
	c.b.mu.Unlock()
	c.closeOnce.Do(func() { _ = c.outW.CloseWithError(err) })
}

// gateway is one run of a gateway: a registry recording into dir, which
// adopts the held session.
type gateway struct {
	t   *testing.T
	reg *sessions.Registry
	rec *Recorder
}

func startGateway(t *testing.T, b *heldBackend, dir string, logs io.Writer) *gateway {
	t.Helper()
	rec, err := New(Config{Dir: dir, Logger: testLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := sessions.New(sessions.Config{Backend: b, Observe: rec.Observe, Logger: testLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := reg.AdoptAll(ctx); n != 1 {
		t.Fatalf("adopted %d sessions, want 1", n)
	}
	return &gateway{t: t, reg: reg, rec: rec}
}

// stop shuts the gateway down (the held session keeps running) and waits
// for its recordings to be closed.
func (g *gateway) stop() {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.reg.Shutdown(ctx); err != nil {
		g.t.Fatalf("shutdown: %v", err)
	}
	closeRecorder(g.t, g.rec)
}

func testLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
