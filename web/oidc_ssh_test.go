package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/creack/pty"
	"golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
)

// waitPTY waits for re in what ssh wrote to its terminal.
func waitPTY(t *testing.T, out *termtest.Stream, re *regexp.Regexp) []string {
	t.Helper()
	m, _ := out.WaitFor(re, 0, 30*time.Second)
	if m == nil {
		t.Fatalf("no %s from ssh; it printed:\n%q", re, out.String())
	}
	return m
}

// newKeyFile writes a fresh ed25519 key that no authorized_keys line has.
func newKeyFile(t *testing.T) string {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func sshArgs(gw *gateway, key string, batch bool, rest ...string) []string {
	_, port, _ := net.SplitHostPort(gw.sshAddr)
	b := "no"
	if batch {
		b = "yes"
	}
	return append([]string{"-F", "/dev/null", "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=" + b,
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "PreferredAuthentications=publickey,keyboard-interactive", "-p", port}, rest...)
}

// sshPTY runs ssh on a terminal; out is what it prints, done its exit.
func sshPTY(t *testing.T, args []string) (*termtest.Stream, chan error, *os.File) {
	t.Helper()
	cmd := exec.Command("ssh", args...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := termtest.NewStream()
	done := make(chan error, 1)
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, f); close(copied) }()
	go func() { err := cmd.Wait(); <-copied; done <- err }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return out, done, f
}

// signinPrompt waits for the URL and the code ssh prints; the URL must
// not carry the code (M1: a link alone approves nothing).
func signinPrompt(t *testing.T, out *termtest.Stream) (u, code string) {
	t.Helper()
	u = waitPTY(t, out, regexp.MustCompile(`open\s+(http://\S+)\s`))[1]
	code = waitPTY(t, out, regexp.MustCompile(`code there:\s+([A-Z0-9]{4}-[A-Z0-9]{4})\s`))[1]
	if strings.Contains(u, code) || !strings.HasSuffix(u, "/ssh") {
		t.Fatalf("the printed URL %q carries the code %s, or is not the /ssh page", u, code)
	}
	return u, code
}

// fingerprint is the SHA256 fingerprint of the private key in file.
func fingerprint(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.FingerprintSHA256(s.PublicKey())
}

// waitExit waits up to d for an ssh to end.
func waitExit(t *testing.T, done chan error, d time.Duration, out *termtest.Stream, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: the ssh is still running after %s; it printed:\n%q", what, d, out.String())
	}
}

// typeCode types code into the page's code field and submits it.
func (b *browser) typeCode(code string) {
	b.t.Helper()
	b.waitFunc2("the code form", `document.getElementById('ssh-code') !== null`, `location.href + "\n" + document.body.innerText`)
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('ssh-code').focus()`))
	ctx, cancel := b.step()
	defer cancel()
	if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: code}); err != nil {
		b.fail("typing the code: %v", err)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('ssh-code-submit').click()`))
}

// TestOpenSSHSignIn: plain OpenSSH with a key the gateway does not know
// signs in through the browser (contract, "Single sign-on"): ssh prints
// the page's URL without the code; in Chromium, after Dex, the page asks
// for the code (showing none), the person types it, the page shows the
// key's fingerprint, the login, the client's address and version; Approve
// lets the waiting ssh into the shell. Then: ssh HOST keys and the page
// list the key; a second key is denied (the ssh ends saying so); a third
// is forgotten with the page's Forget; and the browser's logout forgets
// the keys it approved and cuts the attached shell within 5 s.
func TestOpenSSHSignIn(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	issuer := needOIDC(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no OpenSSH client")
	}
	gw, base := startSSOGateway(t, issuer, "  - {groups: [termgate-admins], instances: [\"*\"]}\n")
	name := startInstance(t, gw.label)
	key := newKeyFile(t)

	out, done, f := sshPTY(t, sshArgs(gw, key, false, "-t", name+"@127.0.0.1"))
	u, code := signinPrompt(t, out)
	b := startBrowser(t, chromium)
	b.do(chromedp.Navigate(u))
	b.dexLogin(base, "alice@example.com")
	b.waitFunc2("the code form", `document.getElementById('ssh-code') !== null`, `location.href + "\n" + document.body.innerText`)
	if page := eval[string](b, `document.body.innerText + document.getElementById('ssh-code').value`); strings.Contains(page, code) {
		t.Fatalf("the page shows or fills in the code: %q", page)
	}
	b.shot("ssh-signin-01-code")
	b.typeCode(strings.ToLower(code))
	b.waitFunc2("the approval page", `document.getElementById('approve') !== null`, `location.href + "\n" + document.body.innerText`)
	fp := fingerprint(t, key)
	if got := b.textOf("ssh-fingerprint"); got != fp {
		t.Fatalf("the page shows the key %q, want %q", got, fp)
	}
	if login, remote, client := b.textOf("ssh-login"), b.textOf("ssh-remote"), b.textOf("ssh-client"); login != name ||
		!strings.HasPrefix(remote, "127.0.0.1:") || !strings.Contains(client, "OpenSSH") {
		t.Fatalf("the page shows login %q, from %q, client %q", login, remote, client)
	}
	if ask := b.textOf("ssh-ask"); !strings.Contains(ask, "alice@example.com") {
		t.Fatalf("approval page: %q", ask)
	}
	b.shot("ssh-signin-02-approve")
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('approve').click()`))
	b.waitFunc2("the approved page", `document.getElementById('approved') !== null`, `location.href + "\n" + document.body.innerText`)

	// The waiting ssh goes on into the shell.
	waitPTY(t, out, regexp.MustCompile(`BusyBox|[#$] `))
	_, _ = f.Write([]byte("echo sso-ssh-$((6*7))\r"))
	waitPTY(t, out, regexp.MustCompile(`sso-ssh-42`))

	// The key is remembered: a second ssh in batch mode goes straight in.
	whoami, err := exec.Command("ssh", sshArgs(gw, key, true, "termgate@127.0.0.1", "whoami")...).Output()
	if err != nil || !strings.HasPrefix(string(whoami), "alice@example.com (key SHA256:") || !strings.Contains(string(whoami), "signed in with") {
		t.Fatalf("whoami: %v, %q", err, whoami)
	}
	list, err := exec.Command("ssh", sshArgs(gw, key, true, "termgate@127.0.0.1", "keys")...).Output()
	if err != nil || !strings.Contains(string(list), fp+"  approved") || !strings.Contains(string(list), "(this key)") {
		t.Fatalf("ssh keys: %v, %q", err, list)
	}
	if !regexp.MustCompile(`"method":"oidc-ssh".*"fingerprint":"` + regexp.QuoteMeta(fp) + `".*"ssh_remote":"127\.0\.0\.1:\d+"`).MatchString(gw.logs.String()) {
		t.Errorf("the approval's audit record names no fingerprint or SSH client address:\n%s", gw.logs.String())
	}

	// A second key: Deny ends its ssh with a message.
	key2 := newKeyFile(t)
	out2, done2, _ := sshPTY(t, sshArgs(gw, key2, false, "termgate@127.0.0.1", "whoami"))
	_, code2 := signinPrompt(t, out2)
	b.do(chromedp.Navigate(base + "/ssh"))
	b.typeCode(code2)
	b.waitFunc2("the approval page", `document.getElementById('deny') !== null`, `location.href + "\n" + document.body.innerText`)
	if got := b.textOf("ssh-fingerprint"); got != fingerprint(t, key2) {
		t.Fatalf("the page shows %q for the second key", got)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('deny').click()`))
	b.waitFunc2("the denied page", `document.getElementById('denied') !== null`, `location.href + "\n" + document.body.innerText`)
	waitExit(t, done2, 10*time.Second, out2, "denied")
	waitPTY(t, out2, regexp.MustCompile(`alice@example.com denied this sign-in in the browser`))

	// A third key, approved, then forgotten with the page's Forget.
	key3 := newKeyFile(t)
	out3, done3, _ := sshPTY(t, sshArgs(gw, key3, false, "termgate@127.0.0.1", "whoami"))
	_, code3 := signinPrompt(t, out3)
	b.do(chromedp.Navigate(base + "/ssh"))
	b.typeCode(code3)
	b.waitFunc2("the approval page", `document.getElementById('approve') !== null`, `location.href + "\n" + document.body.innerText`)
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('approve').click()`))
	b.waitFunc2("the approved page", `document.getElementById('approved') !== null`, `location.href + "\n" + document.body.innerText`)
	waitExit(t, done3, 10*time.Second, out3, "the third key's whoami")
	fp3 := fingerprint(t, key3)
	b.do(chromedp.Navigate(base + "/ssh"))
	b.waitFunc2("both keys listed", fmt.Sprintf(`document.getElementById('ssh-keys') !== null && document.getElementById('ssh-keys').innerText.includes(%q) && document.getElementById('ssh-keys').innerText.includes(%q)`, fp, fp3), `document.body.innerText`)
	b.shot("ssh-signin-03-keys")
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector('#ssh-keys input[value=%q]').form.querySelector('button').click()`, fp3)))
	b.waitFunc2("the third key gone from the list", fmt.Sprintf(`location.pathname === '/ssh' && document.getElementById('ssh-code') !== null && !document.body.innerText.includes(%q)`, fp3), `document.body.innerText`)
	if out, err := exec.Command("ssh", sshArgs(gw, key3, true, "termgate@127.0.0.1", "whoami")...).CombinedOutput(); err == nil {
		t.Fatalf("a forgotten key still gets in: %q", out)
	}

	// The browser signs out: the keys it approved are forgotten and the
	// shell the first one attached is cut, with a notice, within 5 s.
	if status := eval[int](b, `fetch('/api/logout', {method: 'POST'}).then(r => r.status)`); status != 204 {
		t.Fatalf("logout: %d", status)
	}
	waitExit(t, done, 5*time.Second, out, "after the browser's logout")
	waitPTY(t, out, regexp.MustCompile(`\[termgate\]`))
	if again, err := exec.Command("ssh", sshArgs(gw, key, true, "termgate@127.0.0.1", "whoami")...).CombinedOutput(); err == nil {
		t.Fatalf("after the browser's logout the key still gets in: %q", again)
	}
}
