package sshd

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"

	"github.com/termgate/termgate/internal/termtest"
)

// dialFrom opens an SSH connection from the loopback address local
// (127.0.0.2, 127.0.0.3, ...: each is a different source to the limits).
func (f *fixture) dialFrom(local string, cfg *gossh.ClientConfig) (*gossh.Client, error) {
	conn, err := f.tcpFrom(local)
	if err != nil {
		return nil, err
	}
	cc, chans, reqs, err := gossh.NewClientConn(conn, f.addr, cfg)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return gossh.NewClient(cc, chans, reqs), nil
}

func (f *fixture) tcpFrom(local string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: waitFor}
	return d.Dial("tcp", f.addr)
}

func (f *fixture) failures(ip string) int {
	return f.srv.lim.failureCount(sourceOf(&net.TCPAddr{IP: net.ParseIP(ip)}))
}

func (f *fixture) lockedOut(ip string) bool {
	_, locked := f.srv.lim.lockedOut(sourceOf(&net.TCPAddr{IP: net.ParseIP(ip)}))
	return locked
}

// auditLog collects the audit trail as JSON lines.
type auditLog struct{ buf termtest.SyncBuffer }

func (a *auditLog) events(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(a.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// find returns the events of action whose fields include want.
func (a *auditLog) find(t *testing.T, action string, want map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
next:
	for _, ev := range a.events(t) {
		if ev["event"] != action {
			continue
		}
		for k, v := range want {
			if fmt.Sprint(ev[k]) != fmt.Sprint(v) {
				continue next
			}
		}
		out = append(out, ev)
	}
	return out
}

// wait waits for an event of action with the fields in want.
func (a *auditLog) wait(t *testing.T, action string, want map[string]any) map[string]any {
	t.Helper()
	var got []map[string]any
	eventually(t, fmt.Sprintf("audit event %s %v", action, want), func() bool {
		got = a.find(t, action, want)
		return len(got) > 0
	})
	return got[0]
}

func TestWeakAlgorithmsRefused(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name   string
		mutate func(*gossh.ClientConfig)
	}{
		{"aes128-cbc", func(c *gossh.ClientConfig) { c.Ciphers = []string{gossh.InsecureCipherAES128CBC} }},
		{"3des-cbc", func(c *gossh.ClientConfig) { c.Ciphers = []string{gossh.InsecureCipherTripleDESCBC} }},
		{"arcfour256", func(c *gossh.ClientConfig) { c.Ciphers = []string{gossh.InsecureCipherRC4256} }},
		{"hmac-sha1", func(c *gossh.ClientConfig) {
			c.Ciphers, c.MACs = []string{gossh.CipherAES128CTR}, []string{gossh.HMACSHA1}
		}},
		{"hmac-sha1-96", func(c *gossh.ClientConfig) {
			c.Ciphers, c.MACs = []string{gossh.CipherAES256CTR}, []string{gossh.InsecureHMACSHA196}
		}},
		{"diffie-hellman-group1-sha1", func(c *gossh.ClientConfig) { c.KeyExchanges = []string{gossh.InsecureKeyExchangeDH1SHA1} }},
		{"diffie-hellman-group14-sha1", func(c *gossh.ClientConfig) { c.KeyExchanges = []string{gossh.InsecureKeyExchangeDH14SHA1} }},
		{"diffie-hellman-group-exchange-sha1", func(c *gossh.ClientConfig) {
			c.KeyExchanges = []string{gossh.InsecureKeyExchangeDHGEXSHA1}
		}},
		{"ssh-rsa host key", func(c *gossh.ClientConfig) { c.HostKeyAlgorithms = []string{gossh.KeyAlgoRSA} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.clientConfig("admin", "me")
			tc.mutate(cfg)
			c, err := gossh.Dial("tcp", f.addr, cfg)
			if err == nil {
				_ = c.Close()
				t.Fatalf("a client offering only %s connected", tc.name)
			}
			if !strings.Contains(err.Error(), "no common algorithm") {
				t.Fatalf("err = %v, want no common algorithm", err)
			}
		})
	}
}

func TestModernAlgorithmsAccepted(t *testing.T) {
	f := newFixture(t, nil)
	type alg struct{ kind, name string }
	var all []alg
	for _, k := range kexAlgorithms {
		all = append(all, alg{"kex", k})
	}
	for _, c := range cipherAlgorithms {
		all = append(all, alg{"cipher", c})
	}
	for _, m := range macAlgorithms {
		all = append(all, alg{"mac", m})
	}
	for _, a := range all {
		t.Run(a.kind+" "+a.name, func(t *testing.T) {
			cfg := f.clientConfig("admin", "me")
			switch a.kind {
			case "kex":
				cfg.KeyExchanges = []string{a.name}
			case "cipher":
				cfg.Ciphers = []string{a.name}
			case "mac":
				cfg.Ciphers, cfg.MACs = []string{gossh.CipherAES128CTR}, []string{a.name}
			}
			c, err := gossh.Dial("tcp", f.addr, cfg)
			if err != nil {
				t.Fatalf("a client offering only %s: %v", a.name, err)
			}
			_ = c.Close()
		})
	}
	if slices.ContainsFunc(slices.Concat(kexAlgorithms, cipherAlgorithms, macAlgorithms, publicKeyAuthAlgorithms), func(s string) bool {
		return strings.Contains(s, "sha1") || strings.Contains(s, "cbc") || s == gossh.KeyAlgoRSA
	}) {
		t.Fatal("a SHA-1 or CBC algorithm is configured")
	}
}

func TestRSAOnlyWithSHA2(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := gossh.NewSignerFromKey(rk)
	if err != nil {
		t.Fatal(err)
	}
	as := rs.(gossh.AlgorithmSigner)
	restrict := func(algos ...string) gossh.Signer {
		s, err := gossh.NewSignerWithAlgorithms(as, algos)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("client signatures", func(t *testing.T) {
		f := newFixture(t, nil)
		ak, warnings := keys.ParseAuthorizedKeys(gossh.MarshalAuthorizedKey(rs.PublicKey()))
		if len(warnings) > 0 {
			t.Fatal(warnings)
		}
		f.auth.set(ak)
		cfg := f.clientConfig("admin", "me")
		cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(restrict(gossh.KeyAlgoRSA))}
		if c, err := gossh.Dial("tcp", f.addr, cfg); err == nil {
			_ = c.Close()
			t.Fatal("an ssh-rsa (SHA-1) signature authenticated")
		}
		cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(restrict(gossh.KeyAlgoRSASHA256))}
		c, err := gossh.Dial("tcp", f.addr, cfg)
		if err != nil {
			t.Fatalf("rsa-sha2-256 signature: %v", err)
		}
		_ = c.Close()
	})

	t.Run("RSA host key", func(t *testing.T) {
		f := newFixture(t, func(c *Config) { c.HostSigner = rs })
		cfg := f.clientConfig("admin", "me")
		cfg.HostKeyCallback = gossh.FixedHostKey(rs.PublicKey())
		cfg.HostKeyAlgorithms = []string{gossh.KeyAlgoRSA}
		if c, err := gossh.Dial("tcp", f.addr, cfg); err == nil {
			_ = c.Close()
			t.Fatal("the RSA host key signed with ssh-rsa (SHA-1)")
		}
		cfg.HostKeyAlgorithms = []string{gossh.KeyAlgoRSASHA512}
		c, err := gossh.Dial("tcp", f.addr, cfg)
		if err != nil {
			t.Fatalf("rsa-sha2-512 host key: %v", err)
		}
		_ = c.Close()
	})
}

// A client that finishes the key exchange, then stalls in authentication,
// is cut off at HandshakeTimeout like a silent one.
func TestHandshakeTimeoutCoversAuthentication(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.HandshakeTimeout = 200 * time.Millisecond })
	cfg := f.clientConfig("admin", "me")
	cfg.Auth = []gossh.AuthMethod{gossh.PublicKeysCallback(func() ([]gossh.Signer, error) {
		deadline := time.Now().Add(waitFor)
		for !strings.Contains(f.logs.String(), "handshake timed out") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		return []gossh.Signer{f.keys["admin"]}, nil
	})}
	if c, err := gossh.Dial("tcp", f.addr, cfg); err == nil {
		_ = c.Close()
		t.Fatal("a client that stalled in authentication past the deadline got in")
	}
	if !strings.Contains(f.logs.String(), "handshake timed out") {
		t.Fatal("the server did not time the stalled authentication out")
	}
}

// silentFrom opens a TCP connection from the loopback address ip that never
// speaks SSH; it reports whether the server took it (it sent its version)
// or closed it.
func (f *fixture) silentFrom(t *testing.T, ip string) (net.Conn, bool) {
	t.Helper()
	conn, err := f.tcpFrom(ip)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetReadDeadline(time.Now().Add(waitFor))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err == nil && strings.HasPrefix(line, "SSH-2.0-termgate") {
		return conn, true
	}
	return conn, false
}

// closedByServer reports whether the server closed conn (reads end with
// an error other than a timeout within waitFor).
func closedByServer(conn net.Conn) bool {
	_ = conn.SetReadDeadline(time.Now().Add(waitFor))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func TestPreAuthCaps(t *testing.T) {
	clock := clockwork.NewFakeClock()
	f := newFixture(t, func(c *Config) { c.MaxPreAuthPerIP = 2; c.MaxPreAuth = 3; c.Clock = clock })
	a1, ok1 := f.silentFrom(t, "127.0.0.2")
	_, ok2 := f.silentFrom(t, "127.0.0.2")
	_, ok3 := f.silentFrom(t, "127.0.0.2")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("from one source with MaxPreAuthPerIP 2: accepted %v %v %v, want true true false", ok1, ok2, ok3)
	}
	_, ok4 := f.silentFrom(t, "127.0.0.3")
	_, ok5 := f.silentFrom(t, "127.0.0.3")
	if !ok4 || ok5 {
		t.Fatalf("from a second source with MaxPreAuth 3: accepted %v %v, want true false (it would hold as many as the first)", ok4, ok5)
	}
	// Full, but a newcomer from another source takes the slot of the
	// oldest connection of the source holding the most (127.0.0.2).
	c, err := f.dialFrom("127.0.0.4", f.clientConfig("admin", "me"))
	if err != nil {
		t.Fatalf("a full pre-auth table locked a login from another source out: %v", err)
	}
	defer c.Close()
	if !closedByServer(a1) {
		t.Fatal("the oldest connection of the most crowded source was not dropped")
	}
	// Authenticated connections hold no slot: with three of them open,
	// one more unauthenticated connection (the third) still fits.
	for range 2 {
		cc, err := f.dialFrom("127.0.0.5", f.clientConfig("admin", "me"))
		if err != nil {
			t.Fatalf("authenticated connections counted against the pre-auth cap: %v", err)
		}
		defer cc.Close()
	}
	eventually(t, "the freed slot", func() bool {
		_, ok := f.silentFrom(t, "127.0.0.6")
		return ok
	})
	// Now three sources hold one connection each: a newcomer waits until
	// the oldest has had preauthMinAge to finish its handshake.
	if _, ok := f.silentFrom(t, "127.0.0.7"); ok {
		t.Fatal("a newcomer dropped a connection younger than preauthMinAge")
	}
	clock.Advance(preauthMinAge)
	if _, ok := f.silentFrom(t, "127.0.0.7"); !ok {
		t.Fatal("sources holding one idle connection each kept a newcomer out")
	}
	if s, err := c.NewSession(); err != nil {
		t.Fatalf("the legitimate connection stopped working: %v", err)
	} else if out, err := s.Output("help"); err != nil || string(out) != usage {
		t.Fatalf("help: %q, %v", out, err)
	}
}

// TestPreAuthFloodFromManySources is issue 9 item 11(b): ten addresses
// holding ten unauthenticated connections each filled the total cap of
// 100 and locked every new SSH login out. A login from another address
// still succeeds; the flooding addresses get no more.
func TestPreAuthFloodFromManySources(t *testing.T) {
	f := newFixture(t, nil)
	for i := 2; i <= 11; i++ {
		ip := fmt.Sprintf("127.0.0.%d", i)
		for j := range 10 {
			if _, ok := f.silentFrom(t, ip); !ok {
				t.Fatalf("connection %d from %s refused", j+1, ip)
			}
		}
	}
	if _, ok := f.silentFrom(t, "127.0.0.5"); ok {
		t.Fatal("an 11th unauthenticated connection from one address was accepted")
	}
	c, err := f.dialFrom("127.0.0.12", f.clientConfig("web", "me"))
	if err != nil {
		t.Fatalf("100 unauthenticated connections from 10 addresses locked a login out: %v", err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := s.Output("help"); err != nil || string(out) != usage {
		t.Fatalf("help: %q, %v", out, err)
	}
}

func TestBruteForceLockout(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	al := &auditLog{}
	f := newFixture(t, func(c *Config) { c.Clock = clock; c.Audit = audit.New(&al.buf) })
	const attacker, other = "127.0.0.2", "127.0.0.3"

	// A legitimate user is attached the whole time.
	legit := f.attach(t, "admin", "web1", 80, 24)
	legit.pid()

	guess := func(key string) error {
		c, err := f.dialFrom(attacker, f.clientConfig(key, "root"))
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	for i := 1; i <= 5; i++ {
		if err := guess("stranger"); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Fatalf("guess %d: %v, want an authentication failure", i, err)
		}
		eventually(t, fmt.Sprintf("failure %d counted", i), func() bool {
			return f.failures(attacker) == i || (i == 5 && f.lockedOut(attacker))
		})
	}
	if !f.lockedOut(attacker) {
		t.Fatal("5 failures did not lock the source out")
	}
	// The sixth attempt from the source is refused before SSH starts,
	// even with the right key.
	if err := guess("admin"); err == nil {
		t.Fatal("a locked-out source logged in with a good key")
	} else if strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("locked-out source reached authentication: %v", err)
	}
	// Another source gets in, and the attached session keeps working.
	if c, err := f.dialFrom(other, f.clientConfig("admin", "me")); err != nil {
		t.Fatalf("a legitimate user from another address: %v", err)
	} else {
		_ = c.Close()
	}
	legit.send("echo still-$((40+2))")
	legit.expect("still-42")

	ev := al.wait(t, audit.AuthFailure, map[string]any{"user": "root", "attempts": 1})
	if ev["key"] != gossh.FingerprintSHA256(f.keys["stranger"].PublicKey()) || !strings.HasPrefix(fmt.Sprint(ev["remote"]), attacker+":") ||
		!strings.Contains(fmt.Sprint(ev["reason"]), "not authorized") {
		t.Fatalf("auth_failure event %v", ev)
	}
	if n := len(al.find(t, audit.AuthFailure, nil)); n != 5 {
		t.Fatalf("%d auth_failure events, want 5", n)
	}
	if locked := al.find(t, audit.AuthFailure, map[string]any{"locked_out_until": "2030-01-01T00:10:00Z"}); len(locked) != 1 {
		t.Fatalf("lock-out not audited: %v", al.events(t))
	}

	// After the cooling period the source may log in again.
	clock.Advance(10*time.Minute + time.Second)
	if err := guess("admin"); err != nil {
		t.Fatalf("after the lock-out: %v", err)
	}

	t.Run("failures outside the window do not add up", func(t *testing.T) {
		const ip = "127.0.0.4"
		fail := func(n int) {
			for i := 0; i < n; i++ {
				before := f.failures(ip)
				c, err := f.dialFrom(ip, f.clientConfig("stranger", "root"))
				if err == nil {
					_ = c.Close()
					t.Fatal("stranger got in")
				}
				eventually(t, "the failure counted", func() bool { return f.failures(ip) == before+1 || f.lockedOut(ip) })
			}
		}
		fail(4)
		clock.Advance(5*time.Minute + time.Second)
		fail(4)
		if f.lockedOut(ip) || f.failures(ip) != 4 {
			t.Fatalf("locked %v with %d failures in the window", f.lockedOut(ip), f.failures(ip))
		}
		fail(1)
		if !f.lockedOut(ip) {
			t.Fatal("5 failures within the window did not lock out")
		}
	})
}

func TestPerKeyCaps(t *testing.T) {
	al := &auditLog{}
	f := newFixture(t, func(c *Config) { c.MaxConnsPerKey = 2; c.MaxSessionsPerKey = 2; c.Audit = audit.New(&al.buf) })
	c1 := f.dial(t, "admin", "web1")
	c2 := f.dial(t, "admin", "web2")

	cfg := f.clientConfig("admin", "me")
	banner := make(chan string, 1)
	cfg.BannerCallback = func(msg string) error {
		select {
		case banner <- msg:
		default:
		}
		return nil
	}
	if c, err := gossh.Dial("tcp", f.addr, cfg); err == nil {
		_ = c.Close()
		t.Fatal("a third connection with the key got in")
	}
	select {
	case msg := <-banner:
		if !strings.Contains(msg, "already has 2 connections") {
			t.Fatalf("banner %q", msg)
		}
	default:
		t.Fatal("the client was not told why")
	}
	ev := al.wait(t, audit.AuthFailure, map[string]any{"reason": errKeyConnLimit.Error()})
	if ev["locked_out_until"] != nil || f.failures("127.0.0.1") != 0 {
		t.Fatalf("a connection over the key's cap counted as a failed guess: %v", ev)
	}
	// Another key is not affected.
	if r := f.run(t, "web", "me", "help"); r.code != 0 {
		t.Fatalf("another key: %d", r.code)
	}

	// Sessions count over all the key's connections.
	a := f.attachOn(t, c1, 80, 24)
	a.pid()
	b := f.attachOn(t, c2, 80, 24)
	b.pid()
	// The third channel is refused when it opens, with the reason.
	if s, err := c1.NewSession(); err == nil {
		_ = s.Close()
		t.Fatal("a third session channel for the key was accepted")
	} else if !strings.Contains(err.Error(), "already has 2 sessions open") {
		t.Fatalf("third session refused with %v", err)
	}
	_ = b.sess.Close()
	_ = c2.Close()
	eventually(t, "the freed session and connection slots", func() bool {
		c, err := gossh.Dial("tcp", f.addr, f.clientConfig("admin", "me"))
		if err != nil {
			return false
		}
		defer c.Close()
		s, err := c.NewSession()
		if err != nil {
			return false
		}
		out, err := s.Output("help")
		return err == nil && string(out) == usage
	})
}

func TestEnvRequests(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t, "admin", "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"TERM", true}, {"LANG", true}, {"LC_ALL", true}, {"LC_CTYPE", true}, {"LC_PAPER2", true},
		{"LD_PRELOAD", false}, {"PATH", false}, {"BASH_ENV", false}, {"PROMPT_COMMAND", false},
		{"LC_", true}, {"LC_a", true}, // the glob LC_*, as sshd's AcceptEnv
		{"LC_X;id", false}, {"lang", false}, {"LANGUAGE", false}, {"", false}, {"TERMGATE_SESSION", false},
	} {
		err := s.Setenv(tc.name, "xx_TEST.UTF-8")
		if (err == nil) != tc.ok {
			t.Errorf("env %q: %v, want accepted=%v", tc.name, err, tc.ok)
		}
	}
	// What --accept-env accepts (default LANG LC_*) reaches the new
	// session's shell, nothing else.
	var out strings.Builder
	s.Stdout = &out
	stdin, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	_, _ = fmt.Fprint(stdin, "echo \"lang=$LANG lc=$LC_ALL ld=$LD_PRELOAD.\"; exit 3\r")
	if code := termtest.ExitStatus(t, s.Wait()); code != 3 {
		t.Fatalf("status %d; output %q", code, out.String())
	}
	if !strings.Contains(out.String(), "lang=xx_TEST.UTF-8 lc=xx_TEST.UTF-8 ld=.") {
		t.Fatalf("the shell's environment: %q; want LANG and LC_ALL only", out.String())
	}
}

// certFixture is a fixture whose server trusts one user CA.
type certFixture struct {
	*fixture
	ca, rogue gossh.Signer
	user      gossh.Signer // a key that is not in authorized_keys
	audit     *auditLog
}

func newCertFixture(t *testing.T, mutate ...func(*Config)) *certFixture {
	t.Helper()
	cf := &certFixture{audit: &auditLog{}}
	cf.ca, _ = newSigner(t)
	cf.rogue, _ = newSigner(t)
	cf.user, _ = newSigner(t)
	cas, warnings := keys.ParseUserCAs(gossh.MarshalAuthorizedKey(cf.ca.PublicKey()))
	if len(warnings) > 0 || cas.Len() != 1 {
		t.Fatalf("CA file: %q", warnings)
	}
	// Every refused certificate below is a failed connection from
	// 127.0.0.1; the lock-out has tests of its own.
	cf.fixture = newFixture(t, func(c *Config) {
		c.UserCAs = cas
		c.Audit = audit.New(&cf.audit.buf)
		c.AuthFailLimit = -1
		for _, m := range mutate {
			m(c)
		}
	})
	return cf
}

// cert returns a signer presenting a certificate for cf.user: key ID
// carol, principal web*, valid from a minute ago for an hour, permit-pty,
// signed by the trusted CA; mutate may change it before signing.
func (cf *certFixture) cert(t *testing.T, mutate func(*gossh.Certificate) gossh.Signer) gossh.Signer {
	t.Helper()
	now := time.Now()
	c := &gossh.Certificate{
		Key: cf.user.PublicKey(), Serial: 42, CertType: gossh.UserCert, KeyId: "carol",
		ValidPrincipals: []string{"web*"},
		ValidAfter:      uint64(now.Add(-time.Minute).Unix()), ValidBefore: uint64(now.Add(time.Hour).Unix()),
		Permissions: gossh.Permissions{Extensions: map[string]string{"permit-pty": ""}},
	}
	ca := cf.ca
	if mutate != nil {
		if other := mutate(c); other != nil {
			ca = other
		}
	}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewCertSigner(c, cf.user)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (cf *certFixture) config(signer gossh.Signer, user string) *gossh.ClientConfig {
	cfg := cf.clientConfig("admin", user)
	cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(signer)}
	return cfg
}

func TestCertificates(t *testing.T) {
	cf := newCertFixture(t)

	t.Run("valid certificate, limited to its principals", func(t *testing.T) {
		cfg := cf.config(cf.cert(t, nil), "web1")
		c, err := gossh.Dial("tcp", cf.addr, cfg)
		if err != nil {
			t.Fatalf("valid certificate: %v", err)
		}
		defer c.Close()
		tm := cf.attachOn(t, c, 80, 24)
		tm.pid()
		// As web1@ these would run in web1: the gateway's own user.
		gc, err := gossh.Dial("tcp", cf.addr, cf.config(cf.cert(t, nil), gatewayUser))
		if err != nil {
			t.Fatalf("valid certificate as %s: %v", gatewayUser, err)
		}
		defer gc.Close()
		for _, cmd := range []string{"reset db1", "reset web2"} {
			s, err := gc.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr strings.Builder
			s.Stdout, s.Stderr = &stdout, &stderr
			code := termtest.ExitStatus(t, s.Run(cmd))
			switch cmd {
			case "reset db1":
				if code != 1 || !strings.Contains(stderr.String(), `instance "db1" not found or not running`) {
					t.Fatalf("%s outside the principals: status %d, stderr %q", cmd, code, stderr.String())
				}
			default:
				if code != 0 || !strings.HasPrefix(stdout.String(), "reset web2: new session") {
					t.Fatalf("%s: status %d, stdout %q, stderr %q", cmd, code, stdout.String(), stderr.String())
				}
			}
		}
		if c, err := gossh.Dial("tcp", cf.addr, cf.config(cf.cert(t, nil), "db1")); err == nil {
			defer c.Close()
			s, _ := c.NewSession()
			var stderr strings.Builder
			s.Stderr = &stderr
			if code := termtest.ExitStatus(t, s.Run("")); code != 1 || !strings.Contains(stderr.String(), "not found or not running") {
				t.Fatalf("attach db1 outside the principals: status %d, stderr %q", code, stderr.String())
			}
		}
		ev := cf.audit.wait(t, audit.AuthSuccess, map[string]any{"who": "carol"})
		if ev["key"] != gossh.FingerprintSHA256(cf.user.PublicKey())+" serial=42" {
			t.Fatalf("auth_success %v", ev)
		}
	})

	t.Run("certificate without permit-pty", func(t *testing.T) {
		signer := cf.cert(t, func(c *gossh.Certificate) gossh.Signer { c.Extensions = nil; return nil })
		r := runWith(t, cf.fixture, cf.config(signer, "web1"), "")
		if r.code != 1 || !strings.Contains(r.stderr, "no-pty") {
			t.Fatalf("attach: status %d, stderr %q", r.code, r.stderr)
		}
		if r := runWith(t, cf.fixture, cf.config(signer, "me"), "list"); r.code != 0 {
			t.Fatalf("list: status %d, stderr %q", r.code, r.stderr)
		}
	})

	for _, tc := range []struct {
		name   string
		mutate func(*gossh.Certificate) gossh.Signer
		reason string
	}{
		{"expired", func(c *gossh.Certificate) gossh.Signer {
			c.ValidBefore = uint64(time.Now().Add(-time.Second).Unix())
			return nil
		}, "expired"},
		{"not yet valid", func(c *gossh.Certificate) gossh.Signer {
			c.ValidAfter = uint64(time.Now().Add(time.Hour).Unix())
			return nil
		}, "not yet valid"},
		{"host certificate", func(c *gossh.Certificate) gossh.Signer { c.CertType = gossh.HostCert; return nil }, "not a user certificate"},
		{"signed by an untrusted CA", func(*gossh.Certificate) gossh.Signer { return cf.rogue }, keys.ErrCertUntrusted.Error()},
		{"self-signed", func(*gossh.Certificate) gossh.Signer { return cf.user }, keys.ErrCertUntrusted.Error()},
		{"force-command", func(c *gossh.Certificate) gossh.Signer {
			c.CriticalOptions = map[string]string{"force-command": "list"}
			return nil
		}, "unsupported critical option"},
		{"source-address elsewhere", func(c *gossh.Certificate) gossh.Signer {
			c.CriticalOptions = map[string]string{"source-address": "192.0.2.0/24"}
			return nil
		}, "does not allow 127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := gossh.Dial("tcp", cf.addr, cf.config(cf.cert(t, tc.mutate), "web1"))
			if err == nil {
				_ = c.Close()
				t.Fatalf("%s certificate accepted", tc.name)
			}
			ev := cf.audit.wait(t, audit.AuthFailure, map[string]any{"user": "web1", "key": gossh.FingerprintSHA256(cf.user.PublicKey()) + " serial=42"})
			if !strings.Contains(fmt.Sprint(ev["reason"]), tc.reason) {
				t.Fatalf("reason %q, want %q", ev["reason"], tc.reason)
			}
			cf.audit.buf.Reset()
		})
	}

	t.Run("the certified key alone is not authorized", func(t *testing.T) {
		if c, err := gossh.Dial("tcp", cf.addr, cf.config(cf.user, "web1")); err == nil {
			_ = c.Close()
			t.Fatal("the bare key of a certificate logged in")
		}
	})
	t.Run("plain keys still work", func(t *testing.T) {
		if r := cf.run(t, "admin", "me", "help"); r.code != 0 {
			t.Fatalf("admin: %d", r.code)
		}
	})
	t.Run("no trusted CA configured", func(t *testing.T) {
		f := newFixture(t, nil)
		if c, err := gossh.Dial("tcp", f.addr, cf.config(cf.cert(t, nil), "web1")); err == nil {
			_ = c.Close()
			t.Fatal("a certificate was accepted without --trusted-user-ca-keys")
		}
	})
}

// runWith runs cmd over a new connection made with cfg.
func runWith(t *testing.T, f *fixture, cfg *gossh.ClientConfig, cmd string) result {
	t.Helper()
	c, err := gossh.Dial("tcp", f.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	s.Stdout, s.Stderr = &stdout, &stderr
	if cmd == "" {
		if err := s.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
			t.Fatal(err)
		}
	}
	err = s.Run(cmd)
	if cmd == "" && err != nil && !errors.As(err, new(*gossh.ExitError)) {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), termtest.ExitStatus(t, err)}
}

func TestAuditTrail(t *testing.T) {
	al := &auditLog{}
	f := newFixture(t, func(c *Config) { c.Audit = audit.New(&al.buf) })
	adminFP := gossh.FingerprintSHA256(f.keys["admin"].PublicKey())
	webFP := gossh.FingerprintSHA256(f.keys["web"].PublicKey())

	if _, err := gossh.Dial("tcp", f.addr, f.clientConfig("stranger", "web1")); err == nil {
		t.Fatal("stranger got in")
	}
	tm := f.attach(t, "admin", "web1", 80, 24)
	tm.pid()
	if r := f.run(t, "admin", "me", "reset web1"); r.code != 0 {
		t.Fatalf("reset: %d %q", r.code, r.stderr)
	}
	tm.expect(`session reset by admin \(ssh\)`)
	_ = tm.sess.Close()
	if r := f.run(t, "web", "me", "reset db1"); r.code != 1 {
		t.Fatalf("web key reset db1: %d", r.code)
	}
	if r := f.run(t, "web", "db1", ""); r.code != 1 {
		t.Fatalf("web key attach db1: %d", r.code)
	}

	ev := al.wait(t, audit.AuthFailure, map[string]any{"key": gossh.FingerprintSHA256(f.keys["stranger"].PublicKey())})
	if ev["via"] != "ssh" || !strings.HasPrefix(fmt.Sprint(ev["remote"]), "127.0.0.1:") || ev["user"] != "web1" || ev["reason"] == "" {
		t.Errorf("auth_failure %v", ev)
	}
	ev = al.wait(t, audit.AuthSuccess, map[string]any{"key": adminFP, "who": "admin", "user": "web1"})
	if !strings.HasPrefix(fmt.Sprint(ev["remote"]), "127.0.0.1:") || ev["time"] == nil {
		t.Errorf("auth_success %v", ev)
	}
	first := al.wait(t, audit.Attach, map[string]any{"key": adminFP, "instance": "web1", "result": "ok", "new": true})
	reset := al.wait(t, audit.Reset, map[string]any{"key": adminFP, "instance": "web1", "result": "ok"})
	moved := al.wait(t, audit.Attach, map[string]any{"key": adminFP, "instance": "web1", "after_reset": true})
	if moved["session"] != reset["session"] || first["session"] == reset["session"] || first["session"] == nil {
		t.Errorf("sessions: first attach %v, reset %v, moved %v", first["session"], reset["session"], moved["session"])
	}
	al.wait(t, audit.Detach, map[string]any{"key": adminFP, "instance": "web1", "session": reset["session"], "cause": "client closed the channel"})
	al.wait(t, audit.Reset, map[string]any{"key": webFP, "instance": "db1", "result": "denied", "reason": "instance not allowed for this key"})
	al.wait(t, audit.Attach, map[string]any{"key": webFP, "instance": "db1", "result": "denied"})
	if n := len(al.find(t, audit.Reset, map[string]any{"key": webFP, "result": "ok"})); n != 0 {
		t.Errorf("%d successful resets by the web key", n)
	}
}
