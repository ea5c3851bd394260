package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
)

// commentedKey is a commented-out example of deploy/debian/config.yaml.
var commentedKey = regexp.MustCompile(`^#\s*([a-z][a-z0-9-]*):\s`)

// TestPackagedConfigExamplesUncomment (issue 40 item 2): every commented
// key of the packaged config file, uncommented as docs/INSTALL.md says
// (remove the #), gives a file the gateway starts with. Its paths are
// moved into the test's directories; tls-cert and tls-key go together.
func TestPackagedConfigExamplesUncomment(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "debian", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	etc, state := t.TempDir(), t.TempDir()
	for _, d := range []string{etc, state} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	certFile, keyFile, _ := termtest.WriteCert(t, etc, "localhost")
	mustRename(t, certFile, filepath.Join(etc, "tls.crt"))
	mustRename(t, keyFile, filepath.Join(etc, "tls.key"))
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(etc, "user_ca.pub"), gossh.MarshalAuthorizedKey(sshPub))
	mustWrite(t, filepath.Join(etc, "authorized_keys"), nil)
	text := strings.NewReplacer("/etc/termgate", etc, "/var/lib/termgate", state).Replace(string(raw))
	lines := strings.Split(text, "\n")

	tried := 0
	for i, l := range lines {
		m := commentedKey.FindStringSubmatch(l)
		if m == nil || m[1] == "tls-key" {
			continue
		}
		with := append([]string(nil), lines...)
		with[i] = strings.TrimPrefix(l, "#")
		if m[1] == "tls-cert" {
			for j, o := range lines {
				if strings.HasPrefix(o, "#") && strings.Contains(o, "tls-key:") {
					with[j] = strings.TrimPrefix(o, "#")
				}
			}
		}
		tried++
		t.Run(m[1], func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			mustWrite(t, cfg, []byte(strings.Join(with, "\n")))
			if _, err := parseFlags([]string{"--config", cfg}, env(nil)); err != nil {
				t.Fatalf("line %d %q uncommented: %v", i+1, strings.TrimPrefix(l, "#"), err)
			}
			// The flags startGateway adds (loopback, port 0) and the local
			// backend win over the file: the test serves no real engine.
			g := startGateway(t, t.TempDir(), "--config", cfg, "--backend", "local")
			g.stop()
		})
	}
	if tried < 15 {
		t.Fatalf("only %d commented keys found in the packaged config", tried)
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
