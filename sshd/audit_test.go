package sshd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// newerThanSSHAudit are algorithms Debian's ssh-audit 2.5 does not know
// yet ("[warn] unknown algorithm"): ML-KEM came with OpenSSH 9.9, strict
// key exchange with 9.6, both after it.
var newerThanSSHAudit = []string{gossh.KeyExchangeMLKEM768X25519, "kex-strict-s-v00@openssh.com"}

// sshAudit runs ssh-audit against the fixture and returns its lines. It
// skips without ssh-audit, unless TERMGATE_REQUIRE_OPENSSH=1 (CI installs
// it beside the OpenSSH client).
func sshAudit(t *testing.T, f *fixture) []string {
	t.Helper()
	bin, err := exec.LookPath("ssh-audit")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no ssh-audit (apt-get install ssh-audit): %v", err)
		}
		t.Skip("no ssh-audit installed")
	}
	host, port, _ := net.SplitHostPort(f.addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-n", "-p", port, host)
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // its status is the worst finding; the lines say which
	if ctx.Err() != nil || !strings.Contains(out.String(), "(kex) ") {
		t.Fatalf("ssh-audit did not audit the gateway (%v):\n%s", ctx.Err(), out.String())
	}
	return strings.Split(out.String(), "\n")
}

// finding is one algorithm line of ssh-audit: "(kex) NAME -- [fail] why".
var finding = regexp.MustCompile(`^\((\w+)\) (\S+)\s+-- \[(\w+)\] (.*)$`)

// TestSSHAuditPasses: ssh-audit finds nothing to fail and nothing to warn
// about in the default algorithms (but that it does not know the newest).
// With CompatAlgorithms the NIST key exchanges come back, and ssh-audit
// fails them: the check can fail.
func TestSSHAuditPasses(t *testing.T) {
	f := newFixture(t, nil)
	for _, line := range sshAudit(t, f) {
		m := finding.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, level, why := m[2], m[3], m[4]
		if level == "fail" || (level == "warn" && !(why == "unknown algorithm" && slices.Contains(newerThanSSHAudit, name))) {
			t.Errorf("ssh-audit: %s", line)
		}
	}

	compat := newFixture(t, func(c *Config) { c.CompatAlgorithms = true })
	var failed []string
	for _, line := range sshAudit(t, compat) {
		if m := finding.FindStringSubmatch(line); m != nil && m[3] == "fail" {
			failed = append(failed, m[2])
		}
	}
	if want := compatKex; !slices.Equal(failed, want) {
		t.Errorf("with CompatAlgorithms ssh-audit failed %v, want %v", failed, want)
	}
}

// TestCompatAlgorithms: a client limited to a NIST key exchange or to an
// encrypt-and-MAC MAC is refused by default and served with
// CompatAlgorithms.
func TestCompatAlgorithms(t *testing.T) {
	plain := newFixture(t, nil)
	compat := newFixture(t, func(c *Config) { c.CompatAlgorithms = true })
	type limit struct{ kex, mac string }
	var limits []limit
	for _, k := range compatKex {
		limits = append(limits, limit{kex: k})
	}
	for _, m := range compatMACs {
		limits = append(limits, limit{mac: m})
	}
	for _, l := range limits {
		t.Run(l.kex+l.mac, func(t *testing.T) {
			for _, f := range []*fixture{plain, compat} {
				cfg := f.clientConfig("admin", "me")
				if l.kex != "" {
					cfg.KeyExchanges = []string{l.kex}
				} else {
					cfg.Ciphers, cfg.MACs = []string{gossh.CipherAES128CTR}, []string{l.mac}
				}
				c, err := gossh.Dial("tcp", f.addr, cfg)
				switch {
				case f == plain && err == nil:
					_ = c.Close()
					t.Fatal("connected without CompatAlgorithms")
				case f == plain && !strings.Contains(err.Error(), "no common algorithm"):
					t.Fatalf("without CompatAlgorithms: %v, want no common algorithm", err)
				case f == compat && err != nil:
					t.Fatalf("with CompatAlgorithms: %v", err)
				case f == compat:
					_ = c.Close()
				}
			}
		})
	}
}

// TestOpenSSHDefaults: the real OpenSSH client, with its default settings,
// still connects and agrees on a key exchange and a MAC from the default
// lists (an AEAD cipher has no separate MAC).
func TestOpenSSHDefaults(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no ssh client: %v", err)
		}
		t.Skip("no OpenSSH client (ssh) installed")
	}
	f := newFixture(t, nil)
	dir := t.TempDir()
	keyFile := writeOpenSSHKey(t, dir, "id_ed25519", f.privs["admin"])
	_, port, _ := net.SplitHostPort(f.addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshBin, "-v", "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", keyFile, "-p", port, "me@127.0.0.1", "help")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stdout.String() != usage {
		t.Fatalf("ssh help: %v, stdout %q, stderr:\n%s", err, stdout.String(), stderr.String())
	}
	kex := regexp.MustCompile(`kex: algorithm: (\S+)`).FindStringSubmatch(stderr.String())
	if kex == nil || !slices.Contains(kexAlgorithms, kex[1]) {
		t.Errorf("key exchange %v, want one of %v:\n%s", kex, kexAlgorithms, stderr.String())
	}
	for _, m := range regexp.MustCompile(`kex: (?:server->client|client->server) cipher: \S+ MAC: (\S+)`).FindAllStringSubmatch(stderr.String(), -1) {
		if m[1] != "<implicit>" && !slices.Contains(macAlgorithms, m[1]) {
			t.Errorf("MAC %s, want an AEAD cipher or one of %v", m[1], macAlgorithms)
		}
	}
}

// writeOpenSSHKey writes priv where ssh -i finds it.
func writeOpenSSHKey(t *testing.T, dir, name string, priv ed25519.PrivateKey) string {
	t.Helper()
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
