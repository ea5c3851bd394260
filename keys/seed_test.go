package keys

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

func TestSeedAuthorizedKeys(t *testing.T) {
	home := t.TempDir()
	sshDir := filepath.Join(home, ".ssh")
	if err := os.Mkdir(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	k1, l1 := testKey(t, 1)
	k2, l2 := testKey(t, 2)
	k3, l3 := testKey(t, 3)
	files := map[string]string{
		"id_ed25519.pub": l1 + " alice@laptop\n",
		"work.pub":       l2 + "\n",
		"broken.pub":     "ssh-ed25519 AAAA\n",
		"empty.pub":      "",
		"id_ed25519":     "-----BEGIN OPENSSH PRIVATE KEY-----\n", // not *.pub
		"options.pub":    `command="x" ` + l3 + "\n",
		"known_hosts":    l3 + "\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(sshDir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "state", "authorized_keys")

	seeded, err := SeedAuthorizedKeys(path, home)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeded) != 2 || !strings.HasPrefix(seeded[0], "id_ed25519.pub: ssh-ed25519 SHA256:") ||
		!strings.HasSuffix(seeded[0], " alice@laptop") || !strings.HasPrefix(seeded[1], "work.pub: ") {
		t.Fatalf("seeded = %q", seeded)
	}
	assertMode(t, path, 0o600)
	assertMode(t, filepath.Dir(path), 0o700|os.ModeDir)

	ak, warnings, err := LoadAuthorizedKeys(path)
	if err != nil || len(warnings) != 0 || ak.Len() != 2 {
		t.Fatalf("seeded file: Len %d, warnings %q, err %v", ak.Len(), warnings, err)
	}
	for _, k := range []gossh.PublicKey{k1, k2} {
		if _, err := ak.Authorize(k, tcp("127.0.0.1")); err != nil {
			t.Error(err)
		}
	}
	if _, err := ak.Authorize(k3, nil); err == nil {
		t.Error("a key from a file with options was seeded")
	}

	// An existing file is left alone.
	before, _ := os.ReadFile(path)
	if err := os.WriteFile(filepath.Join(sshDir, "new.pub"), []byte(l3+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seeded, err = SeedAuthorizedKeys(path, home)
	if err != nil || seeded != nil {
		t.Fatalf("second call: %q, %v", seeded, err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("an existing file was changed")
	}
}

func TestSeedAuthorizedKeysNothingToSeed(t *testing.T) {
	for _, home := range []string{"", t.TempDir()} {
		path := filepath.Join(t.TempDir(), "authorized_keys")
		seeded, err := SeedAuthorizedKeys(path, home)
		if err != nil || seeded != nil {
			t.Fatalf("home %q: %q, %v", home, seeded, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("home %q: the file was created with nothing in it (%v)", home, err)
		}
	}
}

func TestSeedAuthorizedKeysSkipsCertificates(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	k1, _ := testKey(t, 1)
	signer := testSigner(t, 9)
	cert := &gossh.Certificate{Key: k1, CertType: gossh.UserCert, ValidPrincipals: []string{"alice"}, ValidBefore: gossh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, signer); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519-cert.pub"), gossh.MarshalAuthorizedKey(cert), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "authorized_keys")
	if seeded, err := SeedAuthorizedKeys(path, home); err != nil || seeded != nil {
		t.Fatalf("seeded %q, %v", seeded, err)
	}
	// And a certificate line in authorized_keys is skipped with a warning.
	ak, warnings := ParseAuthorizedKeys(gossh.MarshalAuthorizedKey(cert))
	if ak.Len() != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "certificates are not supported") {
		t.Fatalf("Len %d, warnings %q", ak.Len(), warnings)
	}
}
