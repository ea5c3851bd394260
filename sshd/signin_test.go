package sshd

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/oidc"
)

// signInFixture is a fixture whose unknown keys may sign in (the browser's
// approval is the test's Broker.Approve; web TestOpenSSHSignIn does it
// with Chromium, Dex and OpenSSH).
func signInFixture(t *testing.T, wait time.Duration) (*fixture, *SignIn) {
	t.Helper()
	store, err := oidc.NewStore(oidc.StoreConfig{Dir: t.TempDir(), Key: oidc.StateKey([]byte("test deployment secret"))})
	if err != nil {
		t.Fatal(err)
	}
	si := &SignIn{Broker: oidc.NewBroker(), Keys: store, Provider: "dex",
		Policies: keys.Policies{{Groups: []string{"ops"}, Instances: []string{"web*"}}},
		URL:      "http://gw/ssh", Wait: wait}
	f := newFixture(t, func(c *Config) { c.SignIn = si })
	return f, si
}

// kiClient dials with key, then keyboard-interactive; each challenge's
// instruction goes to codes, the banners to banner.
func (f *fixture) kiClient(key string, codes chan<- string, banner *strings.Builder, mu *sync.Mutex) (*gossh.Client, error) {
	cfg := termtest.ClientConfig(gatewayUser, f.keys[key], f.hostKey, waitFor)
	cfg.Auth = append(cfg.Auth, gossh.KeyboardInteractive(func(_, instruction string, _ []string, _ []bool) ([]string, error) {
		if strings.Contains(instruction, "/ssh/") {
			codes <- "the URL carries the code: " + instruction
		} else if m := regexp.MustCompile(`\n {4}([A-Z0-9]{4}-[A-Z0-9]{4})\r`).FindStringSubmatch(instruction); m != nil {
			codes <- m[1]
		}
		return nil, nil
	}))
	cfg.BannerCallback = func(msg string) error {
		mu.Lock()
		defer mu.Unlock()
		banner.WriteString(msg)
		return nil
	}
	return gossh.Dial("tcp", f.addr, cfg)
}

// approve types code in the browser sign-in signin and approves it as
// a (what websock's /ssh page does).
func approve(t *testing.T, si *SignIn, code, signin string, a oidc.Approved) oidc.Request {
	t.Helper()
	if len(code) != 9 {
		t.Fatal(code)
	}
	req, _, ticket, err := si.Broker.Claim(code, signin)
	if err != nil {
		t.Fatal(err)
	}
	a.SigninID = signin
	if _, err := si.Broker.Decide(ticket, signin, true, a); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestSignInOverKeyboardInteractive: an unknown key proves itself, gets a
// code, waits for the approval and goes on as the identity; its key is
// then let in directly; a sign-in nobody approves ends with a message.
func TestSignInOverKeyboardInteractive(t *testing.T) {
	f, si := signInFixture(t, 2*time.Second)
	codes := make(chan string, 2)
	var mu sync.Mutex
	var banner strings.Builder
	type dialed struct {
		c   *gossh.Client
		err error
	}
	res := make(chan dialed, 1)
	go func() {
		c, err := f.kiClient("stranger", codes, &banner, &mu)
		res <- dialed{c, err}
	}()
	code := <-codes
	req := approve(t, si, code, "browser-1", oidc.Approved{Issuer: "https://idp", Subject: "alice", Email: "alice@example.com", EmailVerified: true,
		Groups: []string{"ops"}, Expires: time.Now().Add(time.Hour)})
	// What the page showed: this key, the login asked for, the client.
	if want := gossh.FingerprintSHA256(f.keys["stranger"].PublicKey()); len(req.Fingerprints) != 1 || req.Fingerprints[0] != want ||
		req.User != gatewayUser || !strings.HasPrefix(req.Remote, "127.0.0.1:") || !strings.HasPrefix(req.ClientVersion, "SSH-2.0-") {
		t.Fatalf("the request shown: %+v", req)
	}
	d := <-res
	if d.err != nil {
		t.Fatalf("the approved sign-in: %v", d.err)
	}
	r := termtest.Run(t, d.c, "whoami", waitFor)
	d.c.Close()
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "alice@example.com (key SHA256:") {
		t.Fatalf("whoami: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	// The key alone now gets in, as alice, limited by her policy.
	if r := f.run(t, "stranger", gatewayUser, "reset db1"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("alice's reset of db1: %d %q", r.code, r.stderr)
	}
	if r := f.run(t, "stranger", gatewayUser, "logout"); r.code != 0 {
		t.Fatalf("logout: %d %q", r.code, r.stderr)
	}
	// Forgotten: a new sign-in, which nobody approves this time.
	go func() {
		c, err := f.kiClient("stranger", codes, &banner, &mu)
		res <- dialed{c, err}
	}()
	<-codes
	if d := <-res; d.err == nil {
		d.c.Close()
		t.Fatal("a sign-in nobody approved got in")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(banner.String(), "no browser approved the sign-in in 2s") {
		t.Fatalf("banners: %q", banner.String())
	}
}

// TestSignInNeedsAProvenKey: keyboard-interactive without having proven a
// key gets no code, and a message saying why.
func TestSignInNeedsAProvenKey(t *testing.T) {
	f, _ := signInFixture(t, time.Second)
	var mu sync.Mutex
	var banner strings.Builder
	cfg := &gossh.ClientConfig{User: gatewayUser, HostKeyCallback: gossh.FixedHostKey(f.hostKey), Timeout: waitFor,
		Auth: []gossh.AuthMethod{gossh.KeyboardInteractive(func(_, _ string, _ []string, _ []bool) ([]string, error) { return nil, nil })},
		BannerCallback: func(msg string) error {
			mu.Lock()
			defer mu.Unlock()
			banner.WriteString(msg)
			return nil
		}}
	if c, err := gossh.Dial("tcp", f.addr, cfg); err == nil {
		c.Close()
		t.Fatal("keyboard-interactive without a key got in")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(banner.String(), "signing in needs an SSH key") {
		t.Fatalf("banners: %q", banner.String())
	}
}

// signInAs dials with key, approves its code as the identity sub in the
// browser sign-in signin, and closes the connection.
func signInAs(t *testing.T, f *fixture, si *SignIn, key, sub, signin string) {
	t.Helper()
	codes := make(chan string, 1)
	var mu sync.Mutex
	var banner strings.Builder
	res := make(chan error, 1)
	go func() {
		c, err := f.kiClient(key, codes, &banner, &mu)
		if err == nil {
			c.Close()
		}
		res <- err
	}()
	approve(t, si, <-codes, signin, oidc.Approved{Issuer: "https://idp", Subject: sub, Email: sub + "@example.com", EmailVerified: true,
		Groups: []string{"ops"}, Expires: time.Now().Add(time.Hour)})
	if err := <-res; err != nil {
		t.Fatalf("%s's sign-in: %v", key, err)
	}
}

// TestSignInDeniedAndKeys: Deny in the browser ends the waiting ssh with
// who denied it; ssh HOST keys lists the keys of one's own identity
// (issuer and subject) and keys forget forgets one of them, not another
// identity's; a browser sign-in's logout forgets the keys it approved.
func TestSignInDeniedAndKeys(t *testing.T) {
	f, si := signInFixture(t, 5*time.Second)
	codes := make(chan string, 1)
	var mu sync.Mutex
	var banner strings.Builder
	res := make(chan error, 1)
	go func() {
		c, err := f.kiClient("stranger", codes, &banner, &mu)
		if err == nil {
			c.Close()
		}
		res <- err
	}()
	_, _, ticket, err := si.Broker.Claim(<-codes, "browser-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := si.Broker.Decide(ticket, "browser-1", false, oidc.Approved{Email: "alice@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err == nil {
		t.Fatal("a denied sign-in got in")
	}
	mu.Lock()
	if !strings.Contains(banner.String(), "alice@example.com denied this sign-in in the browser") {
		t.Errorf("banners: %q", banner.String())
	}
	mu.Unlock()

	for _, name := range []string{"second", "mallory"} { // keys no authorized_keys line has
		f.keys[name], f.privs[name] = newSigner(t)
	}
	signInAs(t, f, si, "stranger", "alice", "browser-1")
	signInAs(t, f, si, "second", "alice", "browser-2")
	signInAs(t, f, si, "mallory", "mallory", "browser-3")
	fpSecond := gossh.FingerprintSHA256(f.keys["second"].PublicKey())
	fpMallory := gossh.FingerprintSHA256(f.keys["mallory"].PublicKey())
	r := f.run(t, "stranger", gatewayUser, "keys")
	if r.code != 0 || !strings.Contains(r.stdout, fpSecond) || strings.Contains(r.stdout, fpMallory) || !strings.Contains(r.stdout, "(this key)") {
		t.Fatalf("keys: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, "stranger", gatewayUser, "keys forget "+fpMallory); r.code != 1 || !strings.Contains(r.stderr, "no key") {
		t.Fatalf("forgetting another identity's key: %d %q", r.code, r.stderr)
	}
	if r := f.run(t, "stranger", gatewayUser, "keys forget "+fpSecond); r.code != 0 || !strings.Contains(r.stdout, "forgot "+fpSecond) {
		t.Fatalf("keys forget: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, ok := si.Keys.Lookup(fpSecond, time.Now()); ok {
		t.Fatal("a forgotten key is still remembered")
	}
	// browser-1 logs out: the key it approved is forgotten.
	if err := si.Keys.Logout("browser-1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, err := gossh.Dial("tcp", f.addr, termtest.ClientConfig(gatewayUser, f.keys["stranger"], f.hostKey, waitFor)); err == nil {
		c.Close()
		t.Fatal("after its sign-in's logout the key still gets in")
	}
	if r := f.run(t, "mallory", gatewayUser, "whoami"); r.code != 0 || !strings.HasPrefix(r.stdout, "mallory@example.com") {
		t.Fatalf("another sign-in's key: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
