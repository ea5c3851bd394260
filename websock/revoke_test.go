package websock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/keys"
)

// tokBob is the token the revocation tests remove from the token file.
const tokBob = "bob-0123456789abcdef0123456789ab"

// tokenFile is a real token file behind a keys.TokenStore, which the test
// rewrites and reloads as the gateway's polling would.
type tokenFile struct {
	t     *testing.T
	path  string
	store *keys.TokenStore
}

func newTokenFile(t *testing.T, lines ...string) *tokenFile {
	t.Helper()
	f := &tokenFile{t: t, path: filepath.Join(t.TempDir(), "api_token")}
	f.write(lines...)
	store, err := keys.NewTokenStore(keys.Config{Path: f.path, Logger: quietLog(), Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f.store = store
	return f
}

func (f *tokenFile) write(lines ...string) {
	f.t.Helper()
	if err := os.WriteFile(f.path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// set rewrites the file and reloads it.
func (f *tokenFile) set(lines ...string) {
	f.t.Helper()
	f.write(lines...)
	if err := f.store.Reload(); err != nil {
		f.t.Fatal(err)
	}
}

// revokedWithin reads until the server's error event and its close: the
// event must say that access was revoked, the close must come within d, and
// no reset event may arrive first (a revoked client never follows a reset).
func (w *wsClient) revokedWithin(d time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(d)
	var msg string
	for {
		typ, _, err := w.next(deadline)
		if err != nil {
			var code int
			if ce, ok := err.(*websocket.CloseError); ok {
				code = ce.Code
			}
			if msg == "" || code != websocket.ClosePolicyViolation {
				w.t.Fatalf("want an error event saying access was revoked, then close 1008, within %v; got %v after events %+v", d, err, w.events)
			}
			return
		}
		if typ != websocket.TextMessage {
			continue
		}
		switch ev := w.events[len(w.events)-1]; ev.Type {
		case "error":
			if !strings.Contains(ev.Message, "access revoked") {
				w.t.Fatalf("error event %q does not say access was revoked", ev.Message)
			}
			msg = ev.Message
		case "reset":
			w.t.Fatalf("a revoked client was moved into the fresh session %s", ev.Session)
		}
	}
}

// TestRevokedTokenDisconnectsWebSockets (issue 9 item 2): removing a token
// from the token file, then the reload's Registry.Recheck, disconnects its
// WebSocket attaches, by bearer header and by login cookie alike, with an
// error event that says so, within 5 s. Another token's client on the same
// session keeps working.
func TestRevokedTokenDisconnectsWebSockets(t *testing.T) {
	tf := newTokenFile(t, tokAll+" alice", tokBob+" bob")
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.Tokens = tf.store })

	bearer, resp, err := e.dial("/api/instances/web1/terminal", bearerHeader(tokBob))
	if err != nil {
		t.Fatalf("bob by bearer: %v (%s)", err, respText(resp))
	}
	bearer.event("attached")
	cookieHeader := withCookie(e.login(tokBob), e.base)
	byCookie, resp, err := e.dial("/api/instances/web1/terminal", cookieHeader)
	if err != nil {
		t.Fatalf("bob by cookie: %v (%s)", err, respText(resp))
	}
	byCookie.event("attached")
	alice, _ := e.attach("/api/instances/web1/terminal")
	e.waitClients("web1", 3)

	tf.set(tokAll + " alice")
	start := time.Now()
	e.reg.Recheck()
	bearer.revokedWithin(5 * time.Second)
	byCookie.revokedWithin(5*time.Second - time.Since(start))
	e.waitClients("web1", 1)

	mark := alice.out.Len()
	alice.input("still-here\n")
	alice.output(mark, regexpQuote("still-here"))
	// Bob's credentials get nowhere now: the reconnect the page would try.
	e.refused("/api/instances/web1/terminal", bearerHeader(tokBob), 401)
	e.refused("/api/instances/web1/terminal", cookieHeader, 401)
}

// TestResetDoesNotCarryARevokedClient (issue 9 item 2): a reset re-checks
// every attached client before moving it to the fresh shell, so a client
// whose token was removed (before any Recheck ran) is disconnected instead;
// and its own reset control message resets nothing.
func TestResetDoesNotCarryARevokedClient(t *testing.T) {
	tf := newTokenFile(t, tokAll+" alice", tokBob+" bob")
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.Tokens = tf.store })

	bob, resp, err := e.dial("/api/instances/web1/terminal", bearerHeader(tokBob))
	if err != nil {
		t.Fatalf("bob: %v (%s)", err, respText(resp))
	}
	first := bob.event("attached").Session
	alice, _ := e.attach("/api/instances/web1/terminal")
	e.waitClients("web1", 2)
	tf.set(tokAll + " alice") // no Recheck: the reset must check by itself

	bob.control(`{"type":"reset"}`)
	bob.revokedWithin(5 * time.Second)
	if cur := sessionOf(e, "web1"); cur != first {
		t.Fatalf("a revoked client's reset replaced session %s with %s", first, cur)
	}

	// Again, with bob attached and alice resetting: alice follows, bob not.
	tf.set(tokAll+" alice", tokBob+" bob")
	bob, resp, err = e.dial("/api/instances/web1/terminal", bearerHeader(tokBob))
	if err != nil {
		t.Fatalf("bob again: %v (%s)", err, respText(resp))
	}
	bob.event("attached")
	e.waitClients("web1", 2)
	tf.set(tokAll + " alice")
	alice.control(`{"type":"reset"}`)
	if ev := alice.event("reset"); ev.Session == first {
		t.Fatalf("alice's reset event names the old session %s", first)
	}
	bob.revokedWithin(5 * time.Second)
	e.waitClients("web1", 1)
}

// sessionOf returns the instance's current session id ("" without one).
func sessionOf(e *env, instance string) string {
	for _, in := range e.reg.Sessions() {
		if in.Instance == instance {
			return in.Session
		}
	}
	return ""
}
