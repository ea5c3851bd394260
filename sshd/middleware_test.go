package sshd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"

	"github.com/termgate/termgate/internal/termtest"
)

// fakeChannel is the part of a session channel the middlewares use:
// stdout, stderr and the exit status, recorded.
type fakeChannel struct {
	gossh.Channel // anything else panics through the nil interface
	stdout        bytes.Buffer
	stderr        bytes.Buffer
	exits         []int
}

func (c *fakeChannel) Write(p []byte) (int, error) { return c.stdout.Write(p) }
func (c *fakeChannel) Stderr() io.ReadWriter       { return &c.stderr }
func (c *fakeChannel) Close() error                { return nil }
func (c *fakeChannel) SendRequest(name string, _ bool, payload []byte) (bool, error) {
	var status struct{ Status uint32 }
	if name == "exit-status" && gossh.Unmarshal(payload, &status) == nil {
		c.exits = append(c.exits, int(status.Status))
	}
	return false, nil
}

// fakeSession is a session on a fakeChannel, without a connection.
func fakeSession(key gossh.PublicKey) (*session, *fakeChannel) {
	ch := &fakeChannel{}
	return &session{ch: ch, log: discardLogger, ctx: context.Background(), user: "me", key: key,
		remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}}, ch
}

// stubAuthorizer authorizes one key.
type stubAuthorizer struct {
	key gossh.PublicKey
	id  keys.Identity
}

func (a stubAuthorizer) Authorize(key gossh.PublicKey, _ net.Addr) (keys.Identity, error) {
	if bytes.Equal(key.Marshal(), a.key.Marshal()) {
		return a.id, nil
	}
	return keys.Identity{}, errors.New("unknown key")
}

func TestChainOrder(t *testing.T) {
	var got []string
	mw := func(name string) middleware {
		return func(next handler) handler {
			return func(s *session) { got = append(got, name); next(s) }
		}
	}
	chain(func(*session) { got = append(got, "handler") }, mw("a"), mw("b"), mw("c"))(nil)
	if strings.Join(got, ",") != "a,b,c,handler" {
		t.Fatalf("order %v", got)
	}
}

func TestRecovererUnit(t *testing.T) {
	var logs termtest.SyncBuffer
	sess, fc := fakeSession(nil)
	sess.log = slog.New(slog.NewTextHandler(&logs, nil))
	recoverer(func(*session) { panic("boom") })(sess)
	if len(fc.exits) != 1 || fc.exits[0] != 1 {
		t.Fatalf("exits %v, want [1]", fc.exits)
	}
	if !strings.Contains(fc.stderr.String(), "internal error") || strings.Contains(fc.stderr.String(), "boom") {
		t.Fatalf("stderr %q: want a message for the user without the detail", fc.stderr.String())
	}
	if !strings.Contains(logs.String(), "boom") {
		t.Fatalf("log %q lacks the panic", logs.String())
	}
}

func TestAuthenticateUnit(t *testing.T) {
	admin, _ := newSigner(t)
	other, _ := newSigner(t)
	srv := &Server{cfg: Config{Keys: stubAuthorizer{key: admin.PublicKey(), id: keys.Identity{Name: "admin", Grants: []keys.Grant{{}}}}}}
	srv.lim = newLimits(&srv.cfg)
	for _, tc := range []struct {
		name     string
		key      gossh.PublicKey // the verified key, as the channel's open found it
		wantNext bool
	}{
		{"verified and authorized", admin.PublicKey(), true},
		{"no verified key", nil, false},
		{"verified but no longer authorized", other.PublicKey(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess, fc := fakeSession(tc.key)
			called := false
			srv.authenticate(func(s *session) {
				called = true
				if id, ok := s.identity(); !ok || id.Name != "admin" {
					t.Errorf("identity %+v, %v", id, ok)
				}
			})(sess)
			if called != tc.wantNext {
				t.Fatalf("next called: %v, want %v", called, tc.wantNext)
			}
			if !tc.wantNext {
				if fc.stderr.String() != "permission denied\n" || len(fc.exits) != 1 || fc.exits[0] != 1 {
					t.Fatalf("stderr %q, exits %v", fc.stderr.String(), fc.exits)
				}
				if _, ok := sess.identity(); ok {
					t.Fatal("identity stored for a refused session")
				}
			}
		})
	}
}

func TestRouteWithoutIdentityFailsClosed(t *testing.T) {
	sess, fc := fakeSession(nil)
	(&Server{}).route(sess)
	if fc.stderr.String() != "permission denied\n" || len(fc.exits) != 1 || fc.exits[0] != 1 {
		t.Fatalf("stderr %q, exits %v", fc.stderr.String(), fc.exits)
	}
}
