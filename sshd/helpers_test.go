package sshd

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// waitFor bounds every wait in these tests.
const waitFor = 20 * time.Second

// testInstances are the local backend's instances; any other name is
// "not found or not running".
var testInstances = []string{"web1", "web2", "db1"}

// fixture is a real Server on a loopback listener over a real Registry
// with the local PTY backend.
type fixture struct {
	srv     *Server
	reg     *sessions.Registry
	addr    string
	hostKey gossh.PublicKey
	keys    map[string]gossh.Signer
	privs   map[string]ed25519.PrivateKey
	auth    *swapAuthorizer
	logs    *termtest.SyncBuffer
	served  chan error
}

// Client keys: admin may use every instance, web only web*, nopty has
// no-pty, watcher is a read-only key limited to web*, stranger is not in
// authorized_keys.
var keyOptions = map[string]string{
	"admin":   "",
	"web":     `instances="web*" `,
	"nopty":   "no-pty ",
	"watcher": `read-only,instances="web*" `,
}

func newSigner(t testing.TB) (gossh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

func newFixture(t *testing.T, mutate func(*Config)) *fixture {
	t.Helper()
	return newFixtureReg(t, mutate, nil)
}

// newFixtureReg is newFixture with a registry configured by regMutate.
func newFixtureReg(t *testing.T, mutate func(*Config), regMutate func(*sessions.Config)) *fixture {
	t.Helper()
	f := &fixture{keys: map[string]gossh.Signer{}, privs: map[string]ed25519.PrivateKey{}, logs: &termtest.SyncBuffer{}, served: make(chan error, 1)}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var ak strings.Builder
	for _, name := range []string{"admin", "web", "nopty", "watcher", "stranger"} {
		s, priv := newSigner(t)
		f.keys[name], f.privs[name] = s, priv
		if opts, ok := keyOptions[name]; ok {
			fmt.Fprintf(&ak, "%s%s %s\n", opts, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey()))), name)
		}
	}
	parsed, warnings := keys.ParseAuthorizedKeys([]byte(ak.String()))
	if len(warnings) > 0 {
		t.Fatalf("authorized_keys warnings: %v", warnings)
	}
	f.auth = &swapAuthorizer{}
	f.auth.set(parsed)

	regCfg := sessions.Config{
		Backend: local.New(local.Config{Instances: testInstances, Dir: t.TempDir(), Logger: log}),
		Logger:  log,
	}
	if regMutate != nil {
		regMutate(&regCfg)
	}
	reg, err := sessions.New(regCfg)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	host, _ := newSigner(t)
	f.hostKey = host.PublicKey()
	cfg := Config{HostSigner: host, Keys: f.auth, Registry: reg, Logger: log, CloseGrace: 2 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = l.Addr().String()
	go func() { f.served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := reg.Shutdown(ctx); err != nil {
			t.Errorf("registry shutdown: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		select {
		case err := <-f.served:
			if !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		case <-ctx.Done():
			t.Error("Serve did not return after Close")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", f.logs.String())
		}
	})
	return f
}

// swapAuthorizer lets a test change the authorized keys under a running
// server, as a reload of the file would.
type swapAuthorizer struct {
	cur atomic.Pointer[keys.AuthorizedKeys]
}

func (a *swapAuthorizer) set(ak *keys.AuthorizedKeys) { a.cur.Store(ak) }
func (a *swapAuthorizer) Authorize(key gossh.PublicKey, remote net.Addr) (keys.Identity, error) {
	return a.cur.Load().Authorize(key, remote)
}

func (f *fixture) clientConfig(key, user string) *gossh.ClientConfig {
	return termtest.ClientConfig(user, f.keys[key], f.hostKey, waitFor)
}

func (f *fixture) dial(t *testing.T, key, user string) *gossh.Client {
	t.Helper()
	c, err := gossh.Dial("tcp", f.addr, f.clientConfig(key, user))
	if err != nil {
		t.Fatalf("dial as %s@ with key %s: %v", user, key, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// result is what a finished command or session left.
type result struct {
	stdout, stderr string
	code           int
}

// run runs cmd over a new connection and waits for its exit status.
func (f *fixture) run(t *testing.T, key, user, cmd string) result {
	t.Helper()
	c := f.dial(t, key, user)
	defer c.Close()
	r := termtest.Run(t, c, cmd, waitFor)
	return result{r.Stdout, r.Stderr, r.Code}
}

// term is an attached interactive session.
type term struct {
	t      *testing.T
	client *gossh.Client
	sess   *gossh.Session
	stdin  io.WriteCloser
	out    *stream
	errOut *stream
	done   chan error // the session's Wait result
	seen   int        // out offset already matched by expect
}

// attach opens a shell session with a PTY of cols x rows (0x0: unknown).
func (f *fixture) attach(t *testing.T, key, user string, cols, rows int) *term {
	t.Helper()
	return f.attachOn(t, f.dial(t, key, user), cols, rows)
}

func (f *fixture) attachOn(t *testing.T, c *gossh.Client, cols, rows int) *term {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, client: c, sess: s, out: newStream(), errOut: newStream(), done: make(chan error, 1)}
	s.Stdout, s.Stderr = tm.out, tm.errOut
	if tm.stdin, err = s.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", rows, cols, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() { tm.done <- s.Wait() }()
	t.Cleanup(func() { _ = s.Close() })
	return tm
}

func (tm *term) send(line string) {
	tm.t.Helper()
	if _, err := io.WriteString(tm.stdin, line+"\r"); err != nil {
		tm.t.Fatalf("send %q: %v", line, err)
	}
}

// expect waits for re in the output after what earlier expects matched
// and returns its submatches.
func (tm *term) expect(re string) []string {
	tm.t.Helper()
	m, at := tm.out.waitFor(regexp.MustCompile(re), tm.seen)
	if m == nil {
		tm.t.Fatalf("no %q in the output:\n%q\nstderr: %q", re, tm.out.String(), tm.errOut.String())
	}
	tm.seen = at
	return m
}

// expectSize asks the shell for its terminal size until it is want
// ("ROWS COLS"). Window changes reach the shell asynchronously (the
// session's resizer), so a command typed right after one may still see an
// earlier size; every size seen on the way must match allowed.
func (tm *term) expectSize(want string, allowed *regexp.Regexp) {
	tm.t.Helper()
	re := regexp.MustCompile(`size=(\d+ \d+)\.`)
	deadline := time.Now().Add(waitFor)
	for {
		tm.send(`echo "size=$(stty size)."`)
		m, at := tm.out.waitFor(re, tm.seen)
		if m == nil {
			tm.t.Fatalf("no size in the output: %q", tm.out.String())
		}
		tm.seen = at
		switch {
		case m[1] == want:
			return
		case !allowed.MatchString(m[1]):
			tm.t.Fatalf("size %q while waiting for %q", m[1], want)
		case time.Now().After(deadline):
			tm.t.Fatalf("the size never became %q; output %q", want, tm.out.String())
		}
	}
}

// pid asks the shell for its PID.
func (tm *term) pid() string {
	tm.t.Helper()
	tm.send(`echo "pid=$$."`)
	return tm.expect(`pid=(\d+)\.`)[1]
}

// wait waits for the exit status.
func (tm *term) wait() int {
	tm.t.Helper()
	select {
	case err := <-tm.done:
		return termtest.ExitStatus(tm.t, err)
	case <-time.After(waitFor):
		tm.t.Fatalf("session did not end; output %q, stderr %q", tm.out.String(), tm.errOut.String())
	}
	return -1
}

// stream is an output sink that can be waited on.
type stream struct{ *termtest.Stream }

func newStream() *stream { return &stream{termtest.NewStream()} }

// waitFor waits until re matches the stream from offset from on and returns
// the submatches and the offset after the match (nil after waitFor).
func (s *stream) waitFor(re *regexp.Regexp, from int) ([]string, int) {
	return s.WaitFor(re, from, waitFor)
}

// eventually waits, bounded, for cond; for state that has no event to wait
// on (the registry's client count).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func clientsOf(reg *sessions.Registry, instance string) int {
	for _, in := range reg.Sessions() {
		if in.Instance == instance {
			return in.Clients
		}
	}
	return -1
}
