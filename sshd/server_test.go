package sshd

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/termgate/termgate/keys"

	"github.com/termgate/termgate/internal/termtest"
)

func TestNewNeedsConfig(t *testing.T) {
	f := newFixture(t, nil)
	host, _ := newSigner(t)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"host key", Config{Keys: f.auth, Registry: f.reg}},
		{"keys", Config{HostSigner: host, Registry: f.reg}},
		{"registry", Config{HostSigner: host, Keys: f.auth}},
	} {
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("New without %s: no error", tc.name)
		}
	}
	s, err := New(Config{HostSigner: host, Keys: f.auth, Registry: f.reg})
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.Addr != ":2222" || s.cfg.MaxAuthTries != 6 || s.cfg.HandshakeTimeout != 20*time.Second ||
		s.cfg.KeepaliveInterval != 20*time.Second || s.cfg.KeepaliveMax != 3 ||
		s.cfg.MaxPreAuthPerIP != 10 || s.cfg.MaxPreAuth != 100 || s.cfg.AuthFailLimit != 5 ||
		s.cfg.AuthFailWindow != 5*time.Minute || s.cfg.AuthLockout != 10*time.Minute ||
		s.cfg.MaxConnsPerKey != 20 || s.cfg.MaxSessionsPerKey != 20 || s.cfg.Clock == nil ||
		s.cfg.MaxChannelsPerConn != 10 || s.cfg.ChannelStartTimeout != 5*time.Second {
		t.Fatalf("defaults: %+v", s.cfg)
	}
}

func TestAuthRefusesUnknownKeyAndPasswords(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := gossh.Dial("tcp", f.addr, f.clientConfig("stranger", "web1")); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("stranger key: %v, want an authentication failure", err)
	}
	cfg := f.clientConfig("admin", "web1")
	cfg.Auth = []gossh.AuthMethod{
		gossh.Password("secret"),
		gossh.KeyboardInteractive(func(string, string, []string, []bool) ([]string, error) { return nil, nil }),
	}
	// Only publickey is offered, so the client has nothing to try.
	if _, err := gossh.Dial("tcp", f.addr, cfg); err == nil || !strings.Contains(err.Error(), "no supported methods remain") {
		t.Fatalf("password and keyboard-interactive: %v, want them not offered", err)
	}
}

func TestAuthKeyRemovedAfterHandshake(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t, "admin", "me")
	empty, _ := keys.ParseAuthorizedKeys(nil)
	f.auth.set(empty)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	s.Stderr = &stderr
	err = s.Run("list")
	if code := termtest.ExitStatus(t, err); code != 1 || stderr.String() != "permission denied\n" {
		t.Fatalf("status %d, stderr %q", code, stderr.String())
	}
}

func TestAuthFromOption(t *testing.T) {
	f := newFixture(t, nil)
	line := func(from string) string {
		return `from="` + from + `" ` + string(gossh.MarshalAuthorizedKey(f.keys["admin"].PublicKey()))
	}
	ak, _ := keys.ParseAuthorizedKeys([]byte(line("10.0.0.0/8")))
	f.auth.set(ak)
	if _, err := gossh.Dial("tcp", f.addr, f.clientConfig("admin", "me")); err == nil {
		t.Fatal("a key with from=10.0.0.0/8 logged in from 127.0.0.1")
	}
	ak, _ = keys.ParseAuthorizedKeys([]byte(line("127.0.0.1")))
	f.auth.set(ak)
	if r := f.run(t, "admin", "me", "help"); r.code != 0 {
		t.Fatalf("from=127.0.0.1: status %d", r.code)
	}
}

func TestMaxAuthTries(t *testing.T) {
	var strangers []gossh.Signer
	for range 4 {
		s, _ := newSigner(t)
		strangers = append(strangers, s)
	}
	// x/crypto's client offers each key as a query; refused queries count
	// only after a budget of MaxAuthTries, so 4 strangers before the right
	// key exhaust 2 tries but not the default 6.
	for _, tc := range []struct {
		tries int
		ok    bool
	}{{2, false}, {0, true}} {
		f := newFixture(t, func(c *Config) { c.MaxAuthTries = tc.tries })
		cfg := f.clientConfig("admin", "me")
		cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(append(strangers, f.keys["admin"])...)}
		c, err := gossh.Dial("tcp", f.addr, cfg)
		if (err == nil) != tc.ok {
			t.Fatalf("MaxAuthTries %d: login after 4 refused keys: %v, want ok=%v", tc.tries, err, tc.ok)
		}
		if c != nil {
			_ = c.Close()
		}
	}
}

func TestForwardingRefused(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t, "admin", "me")

	if _, err := c.Dial("tcp", "127.0.0.1:22"); err == nil || !strings.Contains(err.Error(), "administratively prohibited") {
		t.Errorf("direct-tcpip: %v, want administratively prohibited", err)
	}
	if l, err := c.Listen("tcp", "127.0.0.1:0"); err == nil {
		_ = l.Close()
		t.Error("tcpip-forward accepted")
	}
	ok, _, err := c.SendRequest("tcpip-forward", true, gossh.Marshal(struct {
		Addr string
		Port uint32
	}{"127.0.0.1", 0}))
	if err != nil || ok {
		t.Errorf("tcpip-forward request: ok=%v err=%v", ok, err)
	}

	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestSubsystem("netconf"); err == nil { // only sftp is served (subsystem.go)
		t.Error("netconf subsystem accepted")
	}
	_ = s.Close()

	s, err = c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	// ssh -A is accepted here; whether the agent is used is decided when
	// the shell or command starts (agent_use.go).
	if err := agent.RequestAgentForwarding(s); err != nil {
		t.Errorf("agent forwarding request: %v", err)
	}
	if ok, err := s.SendRequest("x11-req", true, gossh.Marshal(struct {
		Single bool
		Proto  string
		Cookie string
		Screen uint32
	}{false, "MIT-MAGIC-COOKIE-1", "00", 0})); ok || err != nil {
		t.Errorf("x11-req: ok=%v err=%v", ok, err)
	}
	// The refusals are harmless: the session still works.
	out, err := s.Output("help")
	if err != nil || string(out) != usage {
		t.Fatalf("help after the refusals: %q, %v", out, err)
	}
}

func TestKeepalive(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.KeepaliveInterval = 20 * time.Millisecond; c.KeepaliveMax = 3 })

	t.Run("answered", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", f.addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		cc, chans, reqs, err := gossh.NewClientConn(conn, f.addr, f.clientConfig("admin", "me"))
		if err != nil {
			t.Fatal(err)
		}
		c := gossh.NewClient(cc, chans, closedRequests())
		defer c.Close()
		// Answer five keepalives (many more intervals than KeepaliveMax),
		// then check the connection still works.
		for n := 0; n < 5; {
			select {
			case r := <-reqs:
				if r.Type == keepaliveRequest {
					n++
				}
				_ = r.Reply(false, nil)
			case <-time.After(waitFor):
				t.Fatal("no keepalive")
			}
		}
		go gossh.DiscardRequests(reqs)
		s, err := c.NewSession()
		if err != nil {
			t.Fatalf("connection dropped although it answered: %v", err)
		}
		defer s.Close()
		if out, err := s.Output("help"); err != nil || string(out) != usage {
			t.Fatalf("help: %q, %v", out, err)
		}
	})

	t.Run("unanswered", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", f.addr, waitFor)
		if err != nil {
			t.Fatal(err)
		}
		cc, chans, reqs, err := gossh.NewClientConn(conn, f.addr, f.clientConfig("admin", "me"))
		if err != nil {
			t.Fatal(err)
		}
		c := gossh.NewClient(cc, chans, closedRequests())
		defer c.Close()
		// Never reply: the requests pile up unanswered (reqs is buffered).
		_ = reqs
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Fatal("the server kept a connection that answers no keepalive")
		}
	})
}

func TestHandshakeTimeout(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.HandshakeTimeout = 500 * time.Millisecond })
	// A client that authenticated in time is not cut off once the deadline
	// has passed (the silent connection below outlives it).
	c := f.dial(t, "admin", "me")

	conn, err := net.DialTimeout("tcp", f.addr, waitFor)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(waitFor))
	// Say nothing: the server sends its version, then must hang up.
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the server did not close a silent connection: %v", err)
	}

	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("the authenticated connection was cut: %v", err)
	}
	defer s.Close()
	if out, err := s.Output("help"); err != nil || string(out) != usage {
		t.Fatalf("help: %q, %v", out, err)
	}
}

func TestPanicRecovered(t *testing.T) {
	f := newFixture(t, nil)
	f.srv.handler = chain(func(s *session) {
		if s.cmd == "boom" {
			panic("boom")
		}
		f.srv.route(s)
	}, recoverer, logging, f.srv.authenticate)
	r := f.run(t, "admin", "me", "boom")
	if r.code != 1 || !strings.Contains(r.stderr, "internal error") {
		t.Fatalf("after a panic: status %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(f.logs.String(), "panic in session handler") {
		t.Fatal("the panic was not logged")
	}
	if r := f.run(t, "admin", "me", "help"); r.code != 0 {
		t.Fatalf("server unusable after a panic: %d", r.code)
	}
}

func TestLoggingMiddleware(t *testing.T) {
	f := newFixture(t, nil)
	f.run(t, "admin", "someone", "list")
	// The handler logs after the client got the exit status.
	eventually(t, "the log entry", func() bool { return strings.Contains(f.logs.String(), "session closed") })
	log := f.logs.String()
	for _, want := range []string{"session closed", "user=someone", "key=SHA256:", "command=list", "outcome=exit", "status=0", "duration=", "conn=", "remote=127.0.0.1:", "who=admin"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestShutdown(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- f.srv.Shutdown(ctx) }()
	select {
	case err := <-f.served:
		if !errors.Is(err, ErrServerClosed) {
			t.Fatalf("Serve returned %v", err)
		}
		f.served <- err // for the fixture's cleanup
	case <-ctx.Done():
		t.Fatal("Serve did not return")
	}
	if err := f.reg.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(); code != 1 {
		t.Fatalf("attached client got status %d, want 1", code)
	}
	if !strings.Contains(a.errOut.String(), "[termgate] gateway is shutting down") {
		t.Fatalf("attached client was not told: %q", a.errOut.String())
	}
	_ = a.client.Close()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := gossh.Dial("tcp", f.addr, f.clientConfig("admin", "me")); err == nil {
		t.Fatal("a connection was accepted after Shutdown")
	}
}

// closedRequests is a global request channel for gossh.NewClient when the
// test reads the real one itself (nil would leave NewClient's reader
// goroutine blocked forever).
func closedRequests() chan *gossh.Request {
	c := make(chan *gossh.Request)
	close(c)
	return c
}
