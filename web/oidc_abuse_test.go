package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dexFlow drives a sign-in with a plain HTTP client (no browser): the
// gateway's /login/oidc (with next), Dex's password form, up to the
// gateway's callback URL, which it returns unfollowed with the client.
func dexFlow(t *testing.T, base, next, email string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	stopAtCallback := func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), base+"/oidc/callback") {
			return http.ErrUseLastResponse
		}
		return nil
	}
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: stopAtCallback, Transport: noKeepAlive()}
	u := base + "/login/oidc"
	if next != "" {
		u += "?next=" + url.QueryEscape(next)
	}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Dex's login form posts back to its own URL.
	if resp.StatusCode != 200 || !strings.Contains(string(body), `name="login"`) {
		t.Fatalf("Dex's form: %d %s", resp.StatusCode, body)
	}
	resp, err = c.PostForm(resp.Request.URL.String(), url.Values{"login": {email}, "password": {"password"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cb := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || !strings.HasPrefix(cb, base+"/oidc/callback") {
		t.Fatalf("after Dex's form: %d to %q", resp.StatusCode, cb)
	}
	return c, cb
}

// TestSignInAbuse: the abuse cases of the browser sign-in against real
// Dex (issue 24 item 4): a forged state, a replayed code, an open
// redirect, a callback without its pending cookie, a provider that is
// down (tokens keep working).
func TestSignInAbuse(t *testing.T) {
	t.Parallel()
	issuer := needOIDC(t)
	gw, base := startSSOGateway(t, issuer, "  - {groups: [termgate-users], instances: [\"*\"]}\n")
	get := func(c *http.Client, u string) (int, string, string) {
		t.Helper()
		nc := *c // never follow: the test looks at each answer
		nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := nc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}

	// The round trip, timed (the closing note's numbers).
	t0 := time.Now()
	c, cb := dexFlow(t, base, "https://evil.example/steal", "bob@example.com")
	code, loc, _ := get(c, cb)
	took := time.Since(t0)
	if code != http.StatusFound || loc != "/" {
		t.Fatalf("callback: %d to %q (an outside next must land on /)", code, loc)
	}
	t.Logf("sign-in round trip through the gateway: %s", took.Round(time.Millisecond))
	if code, _, body := get(c, base+"/api/whoami"); code != 200 || !strings.Contains(body, `"who":"bob@example.com"`) {
		t.Fatalf("whoami: %d %s", code, body)
	}

	// Another sign-in's callback (its state is not this browser's), and a
	// callback without its pending cookie: refused.
	c2, _ := dexFlow(t, base, "", "bob@example.com")
	if code, _, body := get(c2, cb); code != http.StatusBadRequest || !strings.Contains(body, "state does not match") {
		t.Errorf("a callback with another sign-in's state: %d %s", code, body)
	}
	plain := &http.Client{Timeout: 10 * time.Second, Transport: noKeepAlive(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if code, _, body := get(plain, cb); code != http.StatusBadRequest || !strings.Contains(body, "not started here") {
		t.Errorf("a callback without its pending cookie: %d %s", code, body)
	}

	// A code replayed with a copy of its pending cookie: Dex refuses the
	// second exchange.
	c3, cb3 := dexFlow(t, base, "", "bob@example.com")
	bu, _ := url.Parse(base + "/oidc/")
	var pending *http.Cookie
	for _, ck := range c3.Jar.Cookies(bu) {
		if ck.Name == "termgate_oidc_pending" {
			pending = ck
		}
	}
	if pending == nil {
		t.Fatal("no pending sign-in cookie")
	}
	if code, _, _ := get(c3, cb3); code != http.StatusFound {
		t.Fatalf("first use of the code: %d", code)
	}
	req, _ := http.NewRequest("GET", cb3, nil)
	req.AddCookie(pending)
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !regexp.MustCompile(`refused the sign-in code`).Match(body) {
		t.Errorf("a replayed code: %d %s", resp.StatusCode, body)
	}

	// The provider down: sign-in says so, tokens keep working.
	down := startGateway(t, "--config", gwConfig(t, "  - {groups: [termgate-users]}\n"), "--oidc-issuer", "http://127.0.0.1:1/dex",
		"--oidc-client-id", "termgate-public", "--public-url", "http://127.0.0.1:9")
	if code, _, body := get(plain, "http://"+down.httpAddr+"/login/oidc"); code != http.StatusServiceUnavailable || !strings.Contains(body, "does not answer") {
		t.Errorf("sign-in with the provider down: %d %s", code, body)
	}
	req, _ = http.NewRequest("GET", "http://"+down.httpAddr+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+signInToken(t, down))
	resp, err = plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a token with the provider down: %d", resp.StatusCode)
	}
	_ = gw
}

// gwConfig writes a config file with the given policies: lines.
func gwConfig(t *testing.T, policies string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte("policies:\n"+policies), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// noKeepAlive is a transport that keeps no idle connection (and no
// goroutine) after a request.
func noKeepAlive() *http.Transport { return &http.Transport{DisableKeepAlives: true} }
