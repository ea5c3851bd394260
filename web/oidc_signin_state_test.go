package web_test

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
)

// signedIn signs email in at base with plain HTTP (Dex's form), landing
// on the SSH page, and returns the client holding the sign-in cookie.
func signedIn(t *testing.T, base, email string) *http.Client {
	t.Helper()
	c, cb := dexFlow(t, base, "/ssh", email)
	code, loc, _ := httpDo(t, c, "GET", cb, "", nil)
	if code != http.StatusFound || loc != "/ssh" {
		t.Fatalf("callback: %d to %q, want the SSH page", code, loc)
	}
	return c
}

// httpDo sends one request (never following redirects); origin, when
// set, is the Origin header; form, when set, the form body.
func httpDo(t *testing.T, c *http.Client, method, u, origin string, form url.Values) (int, string, string) {
	t.Helper()
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := nc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

var ticketRe = regexp.MustCompile(`name=ticket value="([^"]+)"`)

// typeCodeHTTP posts code to base's SSH page as c and returns the page
// and the ticket it carries.
func typeCodeHTTP(t *testing.T, c *http.Client, base, code string) (int, string, string) {
	t.Helper()
	status, _, body := httpDo(t, c, "POST", base+"/ssh", base, url.Values{"code": {code}})
	ticket := ""
	if m := ticketRe.FindStringSubmatch(body); m != nil {
		ticket = html.UnescapeString(m[1])
	}
	return status, body, ticket
}

func decideHTTP(t *testing.T, c *http.Client, base, ticket, decision string) (int, string) {
	t.Helper()
	status, _, body := httpDo(t, c, "POST", base+"/ssh/decide", base, url.Values{"ticket": {ticket}, "decision": {decision}})
	return status, body
}

// TestSSHSignInAbuse: the attacks on the SSH sign-in (red team round 4,
// M1), with real OpenSSH and Dex: the old link with the code approves
// nothing and the page never shows the code; a typed code shows that
// one request (the attacker's key and address, for the victim to see)
// and works once; the approval's ticket is the typing sign-in's (another
// sign-in cannot use it) and works once (a replayed POST is refused); a
// POST without the page's Origin and a token are refused; one sign-in
// types at most 5 codes, then waits; remembered keys are listed and
// forgotten per identity (iss+sub) over the JSON API.
func TestSSHSignInAbuse(t *testing.T) {
	t.Parallel()
	needDocker(t)
	issuer := needOIDC(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no OpenSSH client")
	}
	gw, base := startSSOGateway(t, issuer, "  - {groups: [termgate-admins, termgate-users], instances: [\"*\"]}\n")
	attacker := newKeyFile(t)
	out, done, _ := sshPTY(t, sshArgs(gw, attacker, false, "termgate@127.0.0.1", "whoami"))
	link, code := signinPrompt(t, out)

	alice := signedIn(t, base, "alice@example.com")
	// An old-style link with the code in it: the form, without the code.
	if status, loc, _ := httpDo(t, alice, "GET", link+"/"+code, "", nil); status != http.StatusFound || loc != "/ssh" {
		t.Fatalf("the link with a code: %d to %q", status, loc)
	}
	if status, _, body := httpDo(t, alice, "GET", link, "", nil); status != 200 || strings.Contains(body, code) || !strings.Contains(body, `id=ssh-code `) {
		t.Fatalf("the SSH page: %d, shows the code: %v\n%s", status, strings.Contains(body, code), body)
	}
	// Without the page's Origin, nothing is typed.
	if status, _, body := httpDo(t, alice, "POST", base+"/ssh", "", url.Values{"code": {code}}); status/100 != 4 {
		t.Fatalf("a POST without Origin: %d %s", status, body)
	}
	if status, _, body := httpDo(t, alice, "POST", base+"/ssh", "http://evil.example", url.Values{"code": {code}}); status != http.StatusForbidden {
		t.Fatalf("a POST from another origin: %d %s", status, body)
	}
	// A token cannot approve.
	req, _ := http.NewRequest("POST", base+"/ssh", strings.NewReader("code="+code))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+signInToken(t, gw))
	if resp, err := (&http.Client{Transport: noKeepAlive()}).Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a token typing a code: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// The typed code shows that request: the attacker's key and address.
	status, page, ticket := typeCodeHTTP(t, alice, base, code)
	if status != 200 || ticket == "" || !strings.Contains(page, fingerprint(t, attacker)) || !strings.Contains(page, "127.0.0.1:") || !strings.Contains(page, "OpenSSH") {
		t.Fatalf("the approval page: %d\n%s", status, page)
	}
	// The code works once.
	if status, body, _ := typeCodeHTTP(t, alice, base, code); status != http.StatusNotFound || !strings.Contains(body, "a code works once") {
		t.Fatalf("a code typed twice: %d\n%s", status, body)
	}
	// Another sign-in (bob, who saw the ticket) cannot use it.
	bob := signedIn(t, base, "bob@example.com")
	if status, body := decideHTTP(t, bob, base, ticket, "approve"); status != http.StatusConflict {
		t.Fatalf("bob approving alice's ticket: %d\n%s", status, body)
	}
	// alice denies it (it is not hers); a replay of the POST is refused.
	if status, body := decideHTTP(t, alice, base, ticket, "deny"); status != 200 || !strings.Contains(body, "id=denied") {
		t.Fatalf("deny: %d\n%s", status, body)
	}
	if status, body := decideHTTP(t, alice, base, ticket, "approve"); status != http.StatusConflict {
		t.Fatalf("a replayed POST: %d\n%s", status, body)
	}
	waitExit(t, done, 10*time.Second, out, "the denied attacker")
	if regexp.MustCompile(`(?m)^alice@example.com \(key`).MatchString(out.String()) {
		t.Fatalf("the denied attacker got in:\n%s", out.String())
	}

	// Brute force: bob types 5 wrong codes, then even the right one waits.
	own := newKeyFile(t)
	out2, done2, _ := sshPTY(t, sshArgs(gw, own, false, "termgate@127.0.0.1", "whoami"))
	_, code2 := signinPrompt(t, out2)
	for i := range 5 {
		if status, _, _ := typeCodeHTTP(t, bob, base, fmt.Sprintf("AAAA-AAA%d", i+2)); status != http.StatusNotFound {
			t.Fatalf("wrong code %d: %d", i, status)
		}
	}
	if status, body, _ := typeCodeHTTP(t, bob, base, code2); status != http.StatusTooManyRequests || !strings.Contains(body, "try again in") {
		t.Fatalf("the sixth code: %d\n%s", status, body)
	}
	// alice (another sign-in) is not held back: she approves her own key.
	status, _, ticket2 := typeCodeHTTP(t, alice, base, code2)
	if status != 200 {
		t.Fatalf("alice's own code: %d", status)
	}
	if status, body := decideHTTP(t, alice, base, ticket2, "approve"); status != 200 || !strings.Contains(body, "id=approved") {
		t.Fatalf("approve: %d\n%s", status, body)
	}
	waitExit(t, done2, 10*time.Second, out2, "the approved whoami")
	waitPTY(t, out2, regexp.MustCompile(`alice@example.com \(key`))

	// GET /api/keys lists it for alice, not for bob; bob cannot forget it.
	keysOf := func(c *http.Client) []string {
		t.Helper()
		status, _, body := httpDo(t, c, "GET", base+"/api/keys", "", nil)
		var v struct {
			Keys []struct {
				Fingerprint string `json:"fingerprint"`
			} `json:"keys"`
		}
		if status != 200 || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("GET /api/keys: %d %s", status, body)
		}
		var out []string
		for _, k := range v.Keys {
			out = append(out, k.Fingerprint)
		}
		return out
	}
	fp := fingerprint(t, own)
	if got := keysOf(alice); len(got) != 1 || got[0] != fp {
		t.Fatalf("alice's keys: %v, want [%s]", got, fp)
	}
	if got := keysOf(bob); len(got) != 0 {
		t.Fatalf("bob's keys: %v", got)
	}
	forget := func(c *http.Client) int {
		req, _ := http.NewRequest("POST", base+"/api/keys/forget", strings.NewReader(`{"fingerprint":"`+fp+`"}`))
		req.Header.Set("Origin", base)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := forget(bob); status != http.StatusNotFound {
		t.Fatalf("bob forgetting alice's key: %d", status)
	}
	if status := forget(alice); status != http.StatusNoContent {
		t.Fatalf("alice forgetting her key: %d", status)
	}
	if got := keysOf(alice); len(got) != 0 {
		t.Fatalf("alice's keys after forget: %v", got)
	}
}

// TestSignInSharedState: two gateways sharing one state directory (as
// deploy/kubernetes's replicas share the host key and cookie key): a key
// approved on one gets in on the other; a restart keeps the sign-in and
// the key; a logout on the other one forgets the key and cuts the shell
// it attached on the first within 5 s, and the copied cookie is refused
// there too.
func TestSignInSharedState(t *testing.T) {
	t.Parallel()
	needDocker(t)
	issuer := needOIDC(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no OpenSSH client")
	}
	gw1, base1 := startSSOGateway(t, issuer, "  - {groups: [termgate-admins], instances: [\"*\"]}\n")
	name := startInstance(t, gw1.label)
	port2 := freePort(t)
	base2 := fmt.Sprintf("http://127.0.0.1:%d", port2)
	args2 := append([]string{}, gw1.args...)
	for i := range args2 {
		switch {
		case i > 0 && args2[i-1] == "--public-url":
			args2[i] = base2
		case i > 0 && args2[i-1] == "--http-addr":
			args2[i] = fmt.Sprintf("127.0.0.1:%d", port2)
		}
	}
	gw2 := &gateway{t: t, dir: t.TempDir(), bin: gw1.bin, state: gw1.state, label: gw1.label, args: args2, logs: termtest.NewStream()}
	t.Cleanup(func() {
		gw2.stop()
		if t.Failed() {
			t.Logf("second gateway's log:\n%s", gw2.logs.String())
		}
	})
	gw2.start()

	key := newKeyFile(t)
	alice := signedIn(t, base1, "alice@example.com")
	out, done, _ := sshPTY(t, sshArgs(gw1, key, false, "termgate@127.0.0.1", "whoami"))
	_, code := signinPrompt(t, out)
	_, _, ticket := typeCodeHTTP(t, alice, base1, code)
	if status, body := decideHTTP(t, alice, base1, ticket, "approve"); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	waitExit(t, done, 10*time.Second, out, "the approved whoami")

	whoami := func(gw *gateway) error {
		return exec.Command("ssh", sshArgs(gw, key, true, "termgate@127.0.0.1", "whoami")...).Run()
	}
	// waitFor retries every 1.2 s: each refused ssh counts towards the
	// source's lockout (5 failures), so no more than 4 tries in 5 s.
	waitFor := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s", what, d)
			}
			time.Sleep(1200 * time.Millisecond)
		}
	}
	// Approved on gw1, the key gets in on gw2 (its poll: ~1 s).
	t0 := time.Now()
	waitFor("the key approved on gw1 gets in on gw2", 5*time.Second, func() bool { return whoami(gw2) == nil })
	t.Logf("an approval on gw1 held on gw2 after %s", time.Since(t0).Round(10*time.Millisecond))
	if status, _, body := httpDo(t, alice, "GET", base2+"/api/whoami", "", nil); status != 200 || !strings.Contains(body, "alice@example.com") {
		t.Fatalf("the sign-in on gw2: %d %s", status, body)
	}

	// A restart of gw1 keeps the sign-in and the key.
	gw1.stop()
	gw1.start()
	if err := whoami(gw1); err != nil {
		t.Fatalf("after a restart the key does not get in: %v", err)
	}
	if status, _, body := httpDo(t, alice, "GET", base1+"/api/whoami", "", nil); status != 200 {
		t.Fatalf("after a restart the sign-in is gone: %d %s", status, body)
	}
	files, _ := filepath.Glob(filepath.Join(gw1.state, "signins", "*"))
	if len(files) == 0 {
		t.Fatal("no sign-in state under STATE_DIR/signins")
	}

	// A shell attached on gw1; the logout on gw2 cuts it within 5 s.
	sh, shDone, f := sshPTY(t, sshArgs(gw1, key, true, "-t", name+"@127.0.0.1"))
	waitPTY(t, sh, regexp.MustCompile(`BusyBox|[#$] `))
	_, _ = f.Write([]byte("echo shared-$((6*7))\r"))
	waitPTY(t, sh, regexp.MustCompile(`shared-42`))
	u1, _ := url.Parse(base1)
	saved := alice.Jar.Cookies(u1) // the cookie, copied before the logout clears it
	if status, _, body := httpDo(t, alice, "POST", base2+"/api/logout", base2, nil); status != http.StatusNoContent {
		t.Fatalf("logout on gw2: %d %s", status, body)
	}
	t0 = time.Now()
	waitExit(t, shDone, 5*time.Second, sh, "gw1's shell after the logout on gw2")
	t.Logf("a logout on gw2 cut gw1's shell after %s", time.Since(t0).Round(10*time.Millisecond))
	if err := whoami(gw1); err == nil {
		t.Fatal("after the logout on gw2 the key still gets in on gw1")
	}
	req, _ := http.NewRequest("GET", base1+"/api/whoami", nil)
	for _, ck := range saved {
		req.AddCookie(ck)
	}
	resp, err := (&http.Client{Transport: noKeepAlive()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the copied cookie on gw1 after the logout on gw2: %d", resp.StatusCode)
	}
}
