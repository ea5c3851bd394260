package keys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

func TestHostKeyCreatedThenReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "ssh_host_ed25519_key")
	s1, created, err := LoadOrCreateHostKey(path)
	if err != nil || !created {
		t.Fatalf("first call: created %v, err %v", created, err)
	}
	if s1.PublicKey().Type() != gossh.KeyAlgoED25519 {
		t.Errorf("key type %s, want ed25519", s1.PublicKey().Type())
	}
	assertMode(t, path, 0o600)
	assertMode(t, filepath.Dir(path), 0o700|os.ModeDir)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(before, []byte("-----BEGIN OPENSSH PRIVATE KEY-----")) {
		t.Errorf("not OpenSSH PEM: %.40q", before)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key (temporary file left?)", len(entries))
	}

	s2, created, err := LoadOrCreateHostKey(path)
	if err != nil || created {
		t.Fatalf("second call: created %v, err %v", created, err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("the key file changed on reuse")
	}
	if !bytes.Equal(s1.PublicKey().Marshal(), s2.PublicKey().Marshal()) {
		t.Error("the host key changed on reuse")
	}
}

func TestHostKeyRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	good := pem.EncodeToMemory(block)
	block, err = gossh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	locked := pem.EncodeToMemory(block)

	tests := []struct {
		name    string
		path    string
		wantErr string
		is      error
	}{
		{"group readable", write("group", good, 0o640), "chmod 600", ErrInsecureKeyFile},
		{"world readable", write("world", good, 0o604), "mode 0604", ErrInsecureKeyFile},
		{"corrupt", write("corrupt", []byte("not a key\n"), 0o600), "move it away", nil},
		{"empty", write("empty", nil, 0o600), "move it away", nil},
		{"passphrase", write("locked", locked, 0o600), "passphrase", nil},
		{"directory", dir, "not a regular file", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []byte
			if fi, err := os.Stat(tt.path); err == nil && fi.Mode().IsRegular() {
				before, _ = os.ReadFile(tt.path)
			}
			_, created, err := LoadOrCreateHostKey(tt.path)
			if err == nil || created || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("created %v, err %v; want an error containing %q", created, err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err %v does not wrap %v", err, tt.is)
			}
			if before != nil {
				after, _ := os.ReadFile(tt.path)
				if !bytes.Equal(before, after) {
					t.Error("the refused file was changed")
				}
			}
		})
	}
}

func TestHostKeyUsesAnExistingKeyOfAnotherType(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "mine")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	s, created, err := LoadOrCreateHostKey(path)
	if err != nil || created {
		t.Fatalf("created %v, err %v", created, err)
	}
	want, _ := gossh.NewPublicKey(priv.Public())
	if s.PublicKey().Type() != gossh.KeyAlgoECDSA256 {
		t.Errorf("type %s", s.PublicKey().Type())
	}
	if !bytes.Equal(s.PublicKey().Marshal(), want.Marshal()) {
		t.Error("loaded a different key")
	}
}
