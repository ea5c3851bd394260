package sshd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
)

// TestOpenSSH drives the gateway with the real OpenSSH client. It is
// skipped when ssh is not installed, unless TERMGATE_REQUIRE_OPENSSH=1.
func TestOpenSSH(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no ssh client: %v", err)
		}
		t.Skip("no OpenSSH client (ssh) installed")
	}
	// The server trusts a user CA; certFile is a key (in no
	// authorized_keys) with a certificate for web* from it, where OpenSSH
	// finds it (-i FILE loads FILE-cert.pub).
	ca, _ := newSigner(t)
	cas, _ := keys.ParseUserCAs(gossh.MarshalAuthorizedKey(ca.PublicKey()))
	f := newFixture(t, func(c *Config) { c.UserCAs = cas })
	dir := t.TempDir()
	writeKey := func(name string, priv ed25519.PrivateKey) string {
		t.Helper()
		path := filepath.Join(dir, name)
		block, err := gossh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	keyFile := writeKey("id_ed25519", f.privs["admin"])
	certSigner, certPriv := newSigner(t)
	certFile := writeKey("id_cert", certPriv)
	cert := &gossh.Certificate{
		Key: certSigner.PublicKey(), Serial: 9, CertType: gossh.UserCert, KeyId: "openssh-user",
		ValidPrincipals: []string{"web*"}, ValidBefore: gossh.CertTimeInfinity,
		Permissions: gossh.Permissions{Extensions: map[string]string{"permit-pty": ""}},
	}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile+"-cert.pub", gossh.MarshalAuthorizedKey(cert), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(f.addr)

	// sshRun runs ssh; safe in any goroutine (it never fails the test).
	sshRun := func(identity, stdin string, args ...string) (result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		argv := append([]string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", identity, "-p", port}, args...)
		cmd := exec.CommandContext(ctx, sshBin, argv...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			return result{}, fmt.Errorf("ssh %v: %w", args, err)
		}
		if ctx.Err() != nil {
			return result{}, fmt.Errorf("ssh %v did not finish; stdout %q, stderr %q", args, stdout.String(), stderr.String())
		}
		return result{stdout.String(), stderr.String(), code}, nil
	}
	sshWith := func(t *testing.T, identity, stdin string, args ...string) result {
		t.Helper()
		r, err := sshRun(identity, stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ssh := func(t *testing.T, stdin string, args ...string) result {
		t.Helper()
		return sshWith(t, keyFile, stdin, args...)
	}

	t.Run("help", func(t *testing.T) {
		if r := ssh(t, "", "me@127.0.0.1", "help"); r.code != 0 || r.stdout != usage {
			t.Fatalf("status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	// For an instance's user name an unknown command line is a command to
	// run there (exec_test.go); for the gateway's it is a usage error.
	t.Run("unknown command", func(t *testing.T) {
		if r := ssh(t, "", gatewayUser+"@127.0.0.1", "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, "usage:") {
			t.Fatalf("status %d, stderr %q", r.code, r.stderr)
		}
	})
	// Issue 40 item 6: a typo gets "did you mean", not the usage naming
	// the login as an instance; a command for a stopped instance exits 1
	// with the not-found message, not 2 and the usage.
	t.Run("mistyped command", func(t *testing.T) {
		r := ssh(t, "", "me@127.0.0.1", "resett", "web1")
		if r.code != 2 || !strings.Contains(r.stderr, `unknown command "resett"; did you mean reset?`) ||
			strings.Contains(r.stderr, `instance "me"`) || strings.Count(r.stderr, "\n") > 3 {
			t.Fatalf("status %d, stderr %q; want 2 and a short did you mean", r.code, r.stderr)
		}
	})
	t.Run("command in a stopped instance", func(t *testing.T) {
		r := ssh(t, "", "stopped1@127.0.0.1", "true")
		if r.code != 1 || !strings.Contains(r.stderr, `instance "stopped1" not found or not running`) || strings.Contains(r.stderr, "usage:") {
			t.Fatalf("status %d, stderr %q; want 1 and the not-found message alone", r.code, r.stderr)
		}
	})
	t.Run("not found", func(t *testing.T) {
		r := ssh(t, "", "-tt", "nope@127.0.0.1")
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, `instance "nope" not found or not running`) {
			t.Fatalf("status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	// ssh -tt with a pipe as input sends a 0x0 PTY request: the new
	// session gets 80x24. The shell's exit status becomes ssh's.
	t.Run("attach", func(t *testing.T) {
		r := ssh(t, "echo \"size=$(stty size).\"\necho \"pid=$$.\"\nexit 5\n", "-tt", "web1@127.0.0.1")
		if r.code != 5 {
			t.Fatalf("status %d, want 5; stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "size=24 80.") || !regexp.MustCompile(`pid=\d+\.`).MatchString(r.stdout) {
			t.Fatalf("stdout %q", r.stdout)
		}
	})
	t.Run("reset and list", func(t *testing.T) {
		r := ssh(t, "", "me@127.0.0.1", "reset", "web2")
		if r.code != 0 || !regexp.MustCompile(`^reset web2: new session [0-9a-f]{16}\n$`).MatchString(r.stdout) {
			t.Fatalf("reset: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = ssh(t, "", "web2@127.0.0.1", "reset")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "reset web2: new session ") {
			t.Fatalf("bare reset: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = ssh(t, "", "me@127.0.0.1", "list")
		if r.code != 0 || !regexp.MustCompile(`(?m)^web2 +[0-9a-f]{16} +0 `).MatchString(r.stdout) {
			t.Fatalf("list: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("remote forwarding refused, agent harmless", func(t *testing.T) {
		r := ssh(t, "", "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:0:127.0.0.1:22", "me@127.0.0.1", "help")
		if r.code != 255 || !strings.Contains(r.stderr, "remote port forwarding failed") {
			t.Fatalf("-R: status %d, stderr %q", r.code, r.stderr)
		}
		if r := ssh(t, "", "-A", "me@127.0.0.1", "help"); r.code != 0 || r.stdout != usage {
			t.Fatalf("-A: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	// The server is the one that finds no common algorithm; it says which
	// in its log, and the client gives up with status 255.
	t.Run("weak algorithms refused", func(t *testing.T) {
		for _, tc := range []struct{ opts, want string }{
			{"Ciphers=aes128-cbc", "no common algorithm for client to server cipher"},
			{"Ciphers=aes128-ctr,MACs=hmac-sha1", "no common algorithm for client to server MAC"},
			{"KexAlgorithms=diffie-hellman-group14-sha1", "no common algorithm for key exchange"},
			{"HostKeyAlgorithms=ssh-rsa", "no common algorithm for host key"},
		} {
			var args []string
			for _, o := range strings.Split(tc.opts, ",") {
				args = append(args, "-o", o)
			}
			before := strings.Count(f.logs.String(), tc.want)
			if r := ssh(t, "", append(args, "me@127.0.0.1", "help")...); r.code != 255 || r.stdout != "" {
				t.Errorf("-o %s: status %d, stdout %q, want 255 and nothing", tc.opts, r.code, r.stdout)
			}
			eventually(t, "the server's "+tc.want, func() bool { return strings.Count(f.logs.String(), tc.want) > before })
		}
	})
	t.Run("certificate", func(t *testing.T) {
		r := sshWith(t, certFile, "echo \"pid=$$.\"\nexit 4\n", "-tt", "web1@127.0.0.1")
		if r.code != 4 || !regexp.MustCompile(`pid=\d+\.`).MatchString(r.stdout) {
			t.Fatalf("attach with a certificate: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if r := sshWith(t, certFile, "", "me@127.0.0.1", "reset", "db1"); r.code != 1 || !strings.Contains(r.stderr, `instance "db1" not found or not running`) {
			t.Fatalf("reset outside the certificate's principals: status %d, stderr %q", r.code, r.stderr)
		}
	})
	// Last: it changes the authorized keys. Removing the web key while it
	// is attached disconnects it at the next Recheck, with the notice.
	t.Run("revoked while attached", func(t *testing.T) {
		webFile := writeKey("id_web", f.privs["web"])
		type outcome struct {
			r   result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			r, err := sshRun(webFile, "echo \"pid=$$.\"\n", "-tt", "web1@127.0.0.1")
			done <- outcome{r, err}
		}()
		eventually(t, "the OpenSSH client to attach", func() bool { return clientsOf(f.reg, "web1") == 1 })
		f.setKeys(t, map[string]string{"admin": ""})
		f.reg.Recheck()
		select {
		case o := <-done:
			r := o.r
			if o.err != nil {
				t.Fatal(o.err)
			}
			if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "[termgate] access revoked: this key is no longer authorized; disconnected") {
				t.Fatalf("status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		case <-time.After(revokeWithin):
			t.Fatalf("ssh still attached %v after the revocation", revokeWithin)
		}
	})
}
