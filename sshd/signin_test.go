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
	si := &SignIn{Broker: oidc.NewBroker(), Keys: oidc.NewKeys(16), Provider: "dex",
		Policies: keys.Policies{{Groups: []string{"ops"}, Instances: []string{"web*"}}},
		URL:      func(code string) string { return "http://gw/ssh/" + code }, Wait: wait}
	f := newFixture(t, func(c *Config) { c.SignIn = si })
	return f, si
}

// kiClient dials with key, then keyboard-interactive; each challenge's
// instruction goes to codes, the banners to banner.
func (f *fixture) kiClient(key string, codes chan<- string, banner *strings.Builder, mu *sync.Mutex) (*gossh.Client, error) {
	cfg := termtest.ClientConfig(gatewayUser, f.keys[key], f.hostKey, waitFor)
	cfg.Auth = append(cfg.Auth, gossh.KeyboardInteractive(func(_, instruction string, _ []string, _ []bool) ([]string, error) {
		if m := regexp.MustCompile(`/ssh/([A-Z0-9]{4}-[A-Z0-9]{4})`).FindStringSubmatch(instruction); m != nil {
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
	if err := si.Broker.Approve(code, oidc.Approved{Email: "alice@example.com", Groups: []string{"ops"}, Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
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
