package keys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// writeKey writes priv in OpenSSH format to a fresh 0600 file.
func writeKey(t *testing.T, priv any) string {
	t.Helper()
	block, err := gossh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The holder secret is what keeps two deployments' holders apart: the same
// for every load of one host key (a restart, a replica), different for
// another key, for each key type the gateway loads.
func TestHolderSecretStableAndPerKey(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ed := filepath.Join(t.TempDir(), "ed")
	if _, _, err := LoadOrCreateHostKey(ed); err != nil { // what a first start writes
		t.Fatal(err)
	}
	ed2 := filepath.Join(t.TempDir(), "ed")
	if _, _, err := LoadOrCreateHostKey(ed2); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{"ed25519": ed, "ed25519 (another)": ed2, "rsa": writeKey(t, rsaKey), "ecdsa": writeKey(t, ecKey)}
	seen := map[string]string{}
	for name, p := range paths {
		s1, err := HolderSecret(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, _, err := LoadOrCreateHostKey(p); err != nil { // the gateway accepts it too
			t.Fatalf("%s: the gateway refuses the key: %v", name, err)
		}
		s2, err := HolderSecret(p)
		if err != nil {
			t.Fatalf("%s, second load: %v", name, err)
		}
		if len(s1) != HolderSecretLen || !bytes.Equal(s1, s2) {
			t.Fatalf("%s: secrets %x and %x, want the same %d bytes on every load", name, s1, s2, HolderSecretLen)
		}
		if other, dup := seen[string(s1)]; dup {
			t.Fatalf("%s and %s derive the same secret", name, other)
		}
		seen[string(s1)] = name
	}
	// A copy of the key file (another replica's mount) derives the same.
	b, _ := os.ReadFile(ed)
	cp := filepath.Join(t.TempDir(), "copy")
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := HolderSecret(cp); err != nil || seen[string(s)] != "ed25519" {
		t.Fatalf("a copy of the host key derives %x, %v; want the original's secret", s, err)
	}
}
