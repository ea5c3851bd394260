package web_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/ssh"
)

// needOIDC returns the issuer of the test Dex (scripts/dex/up.sh, which
// .ci/run starts: TERMGATE_TEST_OIDC_ISSUER). Without one the test skips,
// or fails with TERMGATE_REQUIRE_OIDC=1 (CI).
func needOIDC(t *testing.T) string {
	t.Helper()
	issuer := os.Getenv("TERMGATE_TEST_OIDC_ISSUER")
	if issuer == "" {
		if os.Getenv("TERMGATE_REQUIRE_OIDC") == "1" {
			t.Fatal("TERMGATE_TEST_OIDC_ISSUER is not set: start Dex with scripts/dex/up.sh and export the issuer it prints")
		}
		t.Skip("no test OIDC provider: run ISSUER=$(bash scripts/dex/up.sh 5556) and export TERMGATE_TEST_OIDC_ISSUER=$ISSUER")
	}
	return issuer
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startSSOGateway starts a gateway that signs people in with the test Dex
// (the public client) under the given policies: YAML.
func startSSOGateway(t *testing.T, issuer, policies string, extra ...string) (*gateway, string) {
	t.Helper()
	return startSSOGatewayEnv(t, nil, issuer, policies, extra...)
}

// startSSOGatewayEnv is startSSOGateway with env added to the gateway's
// environment.
func startSSOGatewayEnv(t *testing.T, env []string, issuer, policies string, extra ...string) (*gateway, string) {
	t.Helper()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n"+policies), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startGatewayEnv(t, env, append([]string{"--config", cfg, "--oidc-issuer", issuer, "--oidc-client-id", "termgate-public",
		"--public-url", base, "--http-addr", fmt.Sprintf("127.0.0.1:%d", port)}, extra...)...)
	return gw, base
}

// dexLogin fills Dex's login form (the browser is on it, or about to be)
// and waits until the browser is back at the gateway. The form is filled
// and submitted by script, in one evaluation retried until the form is
// there (node handles go stale while Dex's pages load); a submission that
// a page load swallowed (the form shows again, empty) is made again.
func (b *browser) dexLogin(base, email string) {
	b.t.Helper()
	fill := fmt.Sprintf(`(() => { if (location.href.startsWith(%q)) return true; // submitted, and already back
		const l = document.getElementById('login'), p = document.getElementById('password');
		if (!l || !p || !l.form || l.value !== '') return false;
		l.value = %q; p.value = 'password';
		const s = document.getElementById('submit-login'); if (s) s.click(); else l.form.submit();
		return true; })()`, base, email)
	back := fmt.Sprintf(`location.href.startsWith(%q)`, base)
	for attempt := 0; ; attempt++ {
		b.waitFunc2("Dex's login form, filled", fill, `location.href + "\n" + document.body.innerText`)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			ctx, cancel := b.step()
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](back))
			cancel()
			if err == nil && ok {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if attempt == 2 {
			b.waitFunc2("the way back to the gateway", back, `location.href + "\n" + document.body.innerText`)
			return
		}
	}
}

// TestBrowserSignIn: sign-in with a real OpenID Connect provider (Dex) in
// Chromium: "Sign in with ...", the provider's form, back on the page as
// the identity (whoami, who is attached), groups deciding read-only, and a
// logout that cuts the terminal it attached (contract, "Single sign-on").
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	issuer := needOIDC(t)
	gw, base := startSSOGateway(t, issuer, "  - {groups: [termgate-admins], instances: [\"*\"]}\n  - {groups: [termgate-users], instances: [\"web-*\"], read-only: true}\n")
	name := startInstance(t, gw.label)
	b := startBrowser(t, chromium)

	b.do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("signin-oidc")))
	b.shot("sso-01-signin")
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#signin-oidc a').click()`))
	b.dexLogin(base, "alice@example.com")
	b.do(chromedp.WaitVisible(chromedp.ID("picker")))
	who := eval[string](b, `fetch('/api/whoami').then(r => r.json()).then(j => JSON.stringify([j.who, j.via, j.groups.join(',')]))`)
	if who != `["alice@example.com","oidc","termgate-users,termgate-admins"]` {
		t.Fatalf("whoami after signing in: %s", who)
	}
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.typeKeys("echo sso-$((6*7))\r")
	b.waitLine("sso-42")
	if !eval[bool](b, `document.getElementById('readonly').hidden`) {
		t.Error("alice (termgate-admins) is read-only")
	}
	b.waitFunc("alice in the attached list", `(window.termgateAttached || []).some(a => a.who === 'alice@example.com' && a.via === 'websocket')`)
	b.shot("sso-02-terminal")

	// Logout ends the sign-in and cuts the terminal it attached.
	b.do(chromedp.Evaluate[chromedp.Void](`fetch('/api/logout', {method: 'POST'})`))
	b.waitMatch(`signed out: sign in again`)
	if got := eval[int](b, `fetch('/api/whoami').then(r => r.status)`); got != 401 {
		t.Errorf("whoami after logout: %d, want 401", got)
	}

	// bob is only in termgate-users: read-only on web-*.
	b.do(chromedp.Navigate(base + "/login/oidc"))
	b.dexLogin(base, "bob@example.com")
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("bob's read-only badge", `!document.getElementById('readonly').hidden`)
	if code := eval[int](b, fmt.Sprintf(`fetch('/api/instances/%s/terminal/reset', {method: 'POST'}).then(r => r.status)`, name)); code != 403 {
		t.Errorf("bob's reset: %d, want 403", code)
	}
	if logs := gw.logs.String(); !strings.Contains(logs, `"who":"bob@example.com"`) {
		t.Error("the audit trail does not name bob@example.com")
	}
}

// TestBrowserSignInWithoutAPolicy: an identity that no rule matches is
// told so after signing in, and gets no cookie.
func TestBrowserSignInWithoutAPolicy(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	issuer := needOIDC(t)
	_, base := startSSOGateway(t, issuer, "  - {groups: [termgate-admins], instances: [\"*\"]}\n")
	b := startBrowser(t, chromium)
	b.do(chromedp.Navigate(base + "/login/oidc"))
	b.dexLogin(base, "bob@example.com")
	b.do(chromedp.WaitVisible(chromedp.ID("signin-failed")))
	if msg := b.textOf("signin-failed"); !strings.Contains(msg, "You are signed in as bob@example.com, but no policy") {
		t.Fatalf("page after the sign-in: %q", msg)
	}
	if got := eval[int](b, `fetch('/api/whoami').then(r => r.status)`); got != 401 {
		t.Errorf("whoami: %d, want 401", got)
	}
}

// waitFunc2 is waitFunc across navigations (an evaluation that a
// navigation interrupts is tried again), with what to show on failure
// instead of the terminal (these pages have none).
func (b *browser) waitFunc2(what, expr, show string) {
	b.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := b.step()
		var ok bool
		ok, last = chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if last == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := b.step()
	defer cancel()
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](show))
	b.t.Fatalf("waiting for %s: %v; the page: %s", what, last, page)
}

// TestBrowserSignInConfidential: the confidential client (a secret in
// --oidc-client-secret-file) signs in as the public one does. Dex has its
// redirect URI registered on port 5555 (scripts/dex/up.sh).
func TestBrowserSignInConfidential(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	issuer := needOIDC(t)
	secret := filepath.Join(t.TempDir(), "oidc-secret")
	if err := os.WriteFile(secret, []byte("termgate-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n  - {groups: [termgate-users], instances: [\"*\"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const base = "http://127.0.0.1:5555"
	startGateway(t, "--config", cfg, "--oidc-issuer", issuer, "--oidc-client-id", "termgate", "--oidc-client-secret-file", secret,
		"--public-url", base, "--http-addr", "127.0.0.1:5555")
	b := startBrowser(t, chromium)
	b.do(chromedp.Navigate(base + "/login/oidc"))
	b.dexLogin(base, "bob@example.com")
	b.do(chromedp.WaitVisible(chromedp.ID("picker")))
	if who := eval[string](b, `fetch('/api/whoami').then(r => r.json()).then(j => j.who + ' ' + j.via)`); who != "bob@example.com oidc" {
		t.Fatalf("whoami: %q", who)
	}
}

// TestSSHSignInRequired: with --oidc-ssh=required a key in
// authorized_keys no longer gets in by itself.
func TestSSHSignInRequired(t *testing.T) {
	t.Parallel()
	needDocker(t)
	issuer := needOIDC(t)
	gw, _ := startSSOGateway(t, issuer, "  - {groups: [termgate-admins], instances: [\"*\"]}\n", "--oidc-ssh", "required")
	client, err := ssh.Dial("tcp", gw.sshAddr, &ssh.ClientConfig{
		User: "termgate", Auth: []ssh.AuthMethod{ssh.PublicKeys(gw.signer)},
		HostKeyCallback: ssh.FixedHostKey(gw.hostKey), Timeout: 10 * time.Second,
	})
	if err == nil {
		client.Close()
		t.Fatal("an authorized_keys key got in with --oidc-ssh=required")
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("dial: %v", err)
	}
}
