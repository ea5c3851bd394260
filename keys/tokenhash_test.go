package keys

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCheckHash(t *testing.T) {
	tk, _ := ParseTokens([]byte("alpha-0123456789abcdef ci instances=web-*\nbeta-0123456789abcdef ops\n"))
	h := TokenHash("alpha-0123456789abcdef")
	if len(h) != TokenHashLen || bytes.Equal(h, TokenHash("beta-0123456789abcdef")) {
		t.Fatalf("TokenHash = %x", h)
	}
	if bytes.Contains(h, []byte("alpha")) {
		t.Fatal("the identifier carries the token")
	}
	id, ok := tk.CheckHash(h)
	if !ok || id.Name != "ci" || !id.May("web-1") || id.May("db") {
		t.Fatalf("CheckHash = %+v, %v", id, ok)
	}
	// The identity is a copy: changing it changes nothing in the set.
	id.Grants[0].Instances[0] = "*"
	if again, _ := tk.CheckHash(h); again.May("db") {
		t.Error("CheckHash shares the instance patterns")
	}
	if id, ok := tk.CheckHash(TokenHash("beta-0123456789abcdef")); !ok || id.Name != "ops" {
		t.Errorf("second token: %+v, %v", id, ok)
	}
	full := TokenHash("alpha-0123456789abcdef")
	for name, prefix := range map[string][]byte{
		"unknown token": TokenHash("gamma-0123456789abcdef"),
		"nil":           nil,
		"shorter":       full[:TokenHashLen-1],
		"longer":        append(bytes.Clone(full), 0),
		"flipped bit":   append([]byte{full[0] ^ 1}, full[1:]...),
	} {
		if _, ok := tk.CheckHash(prefix); ok {
			t.Errorf("%s accepted", name)
		}
	}
	var none *Tokens
	if _, ok := none.CheckHash(h); ok {
		t.Error("a nil set accepted an identifier")
	}
}

// A token removed from the file no longer matches its identifier: that is
// what ends the browser logins made with it.
func TestTokenStoreCheckHashFollowsReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api_token")
	if err := os.WriteFile(path, []byte("first-token-0123456789 ci\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewTokenStore(Config{Path: path, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := TokenHash("first-token-0123456789")
	if id, ok := s.CheckHash(h); !ok || id.Name != "ci" {
		t.Fatalf("CheckHash = %+v, %v", id, ok)
	}
	writeAtomically(t, path, "second-token-0123456789\n")
	eventually(t, "the revoked token", func() bool {
		_, ok := s.CheckHash(h)
		return !ok
	})
}
