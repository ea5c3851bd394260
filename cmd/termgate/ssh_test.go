package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

func TestTrustedUserCAKeysFlag(t *testing.T) {
	o, err := parseFlags(nil, env(nil))
	if err != nil || o.trustedUserCAKeys != "" {
		t.Fatalf("default: %q, %v", o.trustedUserCAKeys, err)
	}
	o, err = parseFlags(nil, env(map[string]string{"TERMGATE_TRUSTED_USER_CA_KEYS": "/etc/termgate/user_ca.pub"}))
	if err != nil || o.trustedUserCAKeys != "/etc/termgate/user_ca.pub" {
		t.Fatalf("from the environment: %q, %v", o.trustedUserCAKeys, err)
	}
	// A CA file that is not there is a typo, not "trust nobody".
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil { // t.TempDir follows the umask; the gateway refuses a group-writable state dir
		t.Fatal(err)
	}
	t.Setenv("HOME", dir)
	o, err = parseFlags([]string{"--state-dir", dir, "--backend", "local", "--trusted-user-ca-keys", filepath.Join(dir, "nope.pub"),
		"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), o, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--trusted-user-ca-keys") {
		t.Fatalf("run with a missing CA file: %v", err)
	}
}

// The whole gateway with --trusted-user-ca-keys and --audit-log: a user
// certificate logs in over SSH and is limited to its principals, an
// expired one is refused, and the audit file records the logins, the
// resets, the end of the session a reset replaced and, after
// --idle-timeout, the reap.
func TestRunAcceptsUserCertificatesAndAudits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	_, caPriv, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := gossh.NewSignerFromKey(caPriv)
	caFile := filepath.Join(dir, "user_ca.pub")
	if err := os.WriteFile(caFile, gossh.MarshalAuthorizedKey(ca.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	auditFile := filepath.Join(dir, "audit.jsonl")
	g := startGateway(t, dir, "--state-dir", state, "--backend", "local", "--local-instances", "web1,db1",
		"--idle-timeout", "300ms", "--trusted-user-ca-keys", caFile, "--audit-log", auditFile)
	addr := g.ssh

	_, userPriv, _ := ed25519.GenerateKey(rand.Reader)
	user, _ := gossh.NewSignerFromKey(userPriv)
	certFor := func(validBefore time.Time) gossh.Signer {
		c := &gossh.Certificate{
			Key: user.PublicKey(), Serial: 77, CertType: gossh.UserCert, KeyId: "dana",
			ValidPrincipals: []string{"web*"},
			ValidAfter:      uint64(time.Now().Add(-time.Minute).Unix()), ValidBefore: uint64(validBefore.Unix()),
			Permissions: gossh.Permissions{Extensions: map[string]string{"permit-pty": ""}},
		}
		if err := c.SignCert(rand.Reader, ca); err != nil {
			t.Fatal(err)
		}
		s, err := gossh.NewCertSigner(c, user)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	dial := func(s gossh.Signer, login string) (*gossh.Client, error) {
		return gossh.Dial("tcp", addr, &gossh.ClientConfig{User: login, Auth: []gossh.AuthMethod{gossh.PublicKeys(s)},
			HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	}
	runCmd := func(c *gossh.Client, cmd string) (string, int) {
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var stdout, stderr bytes.Buffer
		s.Stdout, s.Stderr = &stdout, &stderr
		err = s.Run(cmd)
		var ee *gossh.ExitError
		switch {
		case err == nil:
			return stdout.String() + stderr.String(), 0
		case errors.As(err, &ee):
			return stdout.String() + stderr.String(), ee.ExitStatus()
		}
		t.Fatalf("%s: %v", cmd, err)
		return "", -1
	}

	if c, err := dial(certFor(time.Now().Add(-time.Second)), "web1"); err == nil {
		c.Close()
		t.Fatal("an expired certificate logged in")
	}
	// As termgate@: for web1@ these commands would run in web1.
	c, err := dial(certFor(time.Now().Add(time.Hour)), "termgate")
	if err != nil {
		t.Fatalf("valid certificate: %v", err)
	}
	defer c.Close()
	if out, code := runCmd(c, "reset db1"); code != 1 || !strings.Contains(out, `instance "db1" not found or not running`) {
		t.Fatalf("reset outside the principals: %d %q", code, out)
	}
	// The second reset ends the first one's session (session_end); the
	// last session is reaped after --idle-timeout (reap).
	for range 2 {
		if out, code := runCmd(c, "reset web1"); code != 0 || !strings.HasPrefix(out, "reset web1: new session ") {
			t.Fatalf("reset web1: %d %q", code, out)
		}
	}

	want := []string{
		`"event":"auth_failure"`,
		`"event":"auth_success"`, `"who":"dana"`, `serial=77"`,
		`"event":"reset","via":"ssh"`, `"result":"denied"`,
		`"event":"reap"`, `"cause":"session ended after its idle timeout"`, `"event":"session_end"`,
	}
	var audited string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(auditFile)
		audited = string(b)
		missing := ""
		for _, w := range want {
			if !strings.Contains(audited, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit log lacks %s:\n%s", missing, audited)
		}
	}
}
