package sshd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"

	"github.com/termgate/termgate/internal/termtest"
)

// fakeContext is an ssh.Context without a connection.
type fakeContext struct {
	context.Context
	sync.Mutex
	vmu    sync.Mutex
	values map[any]any
}

func newFakeContext() *fakeContext {
	return &fakeContext{Context: context.Background(), values: map[any]any{}}
}

func (c *fakeContext) Value(k any) any {
	c.vmu.Lock()
	defer c.vmu.Unlock()
	if v, ok := c.values[k]; ok {
		return v
	}
	return c.Context.Value(k)
}
func (c *fakeContext) SetValue(k, v any) {
	c.vmu.Lock()
	defer c.vmu.Unlock()
	c.values[k] = v
}
func (c *fakeContext) User() string          { return "me" }
func (c *fakeContext) SessionID() string     { return "fake" }
func (c *fakeContext) ClientVersion() string { return "SSH-2.0-fake" }
func (c *fakeContext) ServerVersion() string { return "SSH-2.0-termgate" }
func (c *fakeContext) RemoteAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *fakeContext) LocalAddr() net.Addr   { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *fakeContext) Permissions() *ssh.Permissions {
	return &ssh.Permissions{Permissions: &gossh.Permissions{}}
}

// fakeSession is the part of ssh.Session the middlewares use; anything
// else panics through the nil embedded interface.
type fakeSession struct {
	ssh.Session
	ctx    *fakeContext
	key    gossh.PublicKey
	cmd    string
	stdout bytes.Buffer
	stderr bytes.Buffer
	exits  []int
}

func (s *fakeSession) Context() ssh.Context                    { return s.ctx }
func (s *fakeSession) PublicKey() ssh.PublicKey                { return s.key }
func (s *fakeSession) User() string                            { return "me" }
func (s *fakeSession) RemoteAddr() net.Addr                    { return s.ctx.RemoteAddr() }
func (s *fakeSession) RawCommand() string                      { return s.cmd }
func (s *fakeSession) Pty() (ssh.Pty, <-chan ssh.Window, bool) { return ssh.Pty{}, nil, false }
func (s *fakeSession) Stderr() io.ReadWriter                   { return &s.stderr }
func (s *fakeSession) Write(p []byte) (int, error)             { return s.stdout.Write(p) }
func (s *fakeSession) Close() error                            { return nil }
func (s *fakeSession) Exit(code int) error {
	s.exits = append(s.exits, code)
	return nil
}

// stubAuthorizer authorizes one key.
type stubAuthorizer struct {
	key gossh.PublicKey
	id  keys.Identity
}

func (a stubAuthorizer) Authorize(key gossh.PublicKey, _ net.Addr) (keys.Identity, error) {
	if ssh.KeysEqual(key, a.key) {
		return a.id, nil
	}
	return keys.Identity{}, errors.New("unknown key")
}

func TestChainOrder(t *testing.T) {
	var got []string
	mw := func(name string) middleware {
		return func(next ssh.Handler) ssh.Handler {
			return func(s ssh.Session) { got = append(got, name); next(s) }
		}
	}
	chain(func(ssh.Session) { got = append(got, "handler") }, mw("a"), mw("b"), mw("c"))(nil)
	if strings.Join(got, ",") != "a,b,c,handler" {
		t.Fatalf("order %v", got)
	}
}

func TestRecovererUnit(t *testing.T) {
	var logs termtest.SyncBuffer
	fs := &fakeSession{ctx: newFakeContext()}
	sess := newSession(fs, 0)
	sess.log = slog.New(slog.NewTextHandler(&logs, nil))
	recoverer(func(ssh.Session) { panic("boom") })(sess)
	if len(fs.exits) != 1 || fs.exits[0] != 1 {
		t.Fatalf("exits %v, want [1]", fs.exits)
	}
	if !strings.Contains(fs.stderr.String(), "internal error") || strings.Contains(fs.stderr.String(), "boom") {
		t.Fatalf("stderr %q: want a message for the user without the detail", fs.stderr.String())
	}
	if !strings.Contains(logs.String(), "boom") {
		t.Fatalf("log %q lacks the panic", logs.String())
	}
}

func TestAuthenticateUnit(t *testing.T) {
	admin, _ := newSigner(t)
	other, _ := newSigner(t)
	srv := &Server{cfg: Config{Keys: stubAuthorizer{key: admin.PublicKey(), id: keys.Identity{Name: "admin"}}}}
	srv.lim = newLimits(&srv.cfg)
	for _, tc := range []struct {
		name          string
		key, verified gossh.PublicKey
		wantNext      bool
	}{
		{"verified and authorized", admin.PublicKey(), admin.PublicKey(), true},
		{"session key is not the verified one", admin.PublicKey(), other.PublicKey(), false},
		{"no verified key", admin.PublicKey(), nil, false},
		{"no key", nil, nil, false},
		{"verified but no longer authorized", other.PublicKey(), other.PublicKey(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fakeSession{ctx: newFakeContext(), key: tc.key}
			cs := &connState{log: discardLogger, authed: make(chan struct{})}
			if tc.verified != nil {
				cs.setVerified(tc.verified, keys.Identity{}, nil)
			}
			fs.ctx.SetValue(ctxKeyConnState, cs)
			called := false
			srv.authenticate(func(s ssh.Session) {
				called = true
				if id, ok := identityFrom(s.Context()); !ok || id.Name != "admin" {
					t.Errorf("identity %+v, %v", id, ok)
				}
			})(newSession(fs, 0))
			if called != tc.wantNext {
				t.Fatalf("next called: %v, want %v", called, tc.wantNext)
			}
			if !tc.wantNext {
				if fs.stderr.String() != "permission denied\n" || len(fs.exits) != 1 || fs.exits[0] != 1 {
					t.Fatalf("stderr %q, exits %v", fs.stderr.String(), fs.exits)
				}
				if _, ok := identityFrom(fs.ctx); ok {
					t.Fatal("identity stored for a refused session")
				}
			}
		})
	}
}

func TestRouteWithoutIdentityFailsClosed(t *testing.T) {
	fs := &fakeSession{ctx: newFakeContext()}
	(&Server{}).route(newSession(fs, 0))
	if fs.stderr.String() != "permission denied\n" || len(fs.exits) != 1 || fs.exits[0] != 1 {
		t.Fatalf("stderr %q, exits %v", fs.stderr.String(), fs.exits)
	}
}
