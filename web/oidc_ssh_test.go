package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

// TestOpenSSHSignIn: plain OpenSSH with a key the gateway does not know
// signs in through the browser (contract, "Single sign-on": the prompt's
// URL and code, Chromium signing in at Dex and approving), goes on into
// the shell as that identity with nothing more typed, and the key is
// remembered: whoami names the identity, logout forgets it and cuts the
// shell.
func TestOpenSSHSignIn(t *testing.T) {
	chromium := needChromium(t)
	needDocker(t)
	issuer := needOIDC(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no OpenSSH client")
	}
	gw, base := startSSOGateway(t, issuer, "  - {groups: [termgate-admins], instances: [\"*\"]}\n")
	name := startInstance(t, gw.label)
	key := newKeyFile(t)

	cmd := exec.Command("ssh", sshArgs(gw, key, false, "-t", name+"@127.0.0.1")...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := termtest.NewStream()
	done := make(chan error, 1)
	go func() { _, _ = io.Copy(out, f); done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done; f.Close() })

	u := waitPTY(t, out, regexp.MustCompile(`open\s+(http://\S+/ssh/[A-Z0-9]{4}-[A-Z0-9]{4})\s`))[1]
	b := startBrowser(t, chromium)
	b.do(chromedp.Navigate(u))
	b.dexLogin(base, "alice@example.com")
	b.waitFunc2("the approval page", `document.getElementById('approve') !== null`, `location.href + "\n" + document.body.innerText`)
	if ask := b.textOf("ssh-ask"); !strings.Contains(ask, "alice@example.com") {
		t.Fatalf("approval page: %q", ask)
	}
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
	logout, err := exec.Command("ssh", sshArgs(gw, key, true, "termgate@127.0.0.1", "logout")...).Output()
	if err != nil || !strings.HasPrefix(string(logout), "signed out alice@example.com") {
		t.Fatalf("logout: %v, %q", err, logout)
	}
	// The shell it attached is cut, with a notice, within 5 s.
	select {
	case <-done:
		done <- nil
	case <-time.After(5 * time.Second):
		t.Fatalf("the signed-out ssh is still attached; it printed:\n%q", out.String())
	}
	waitPTY(t, out, regexp.MustCompile(`\[termgate\]`))
	if again, err := exec.Command("ssh", sshArgs(gw, key, true, "termgate@127.0.0.1", "whoami")...).CombinedOutput(); err == nil {
		t.Fatalf("after logout the key still gets in: %q", again)
	}
	if !strings.Contains(gw.logs.String(), `"method":"oidc-ssh"`) {
		t.Error("the approval is not in the audit trail")
	}

}
