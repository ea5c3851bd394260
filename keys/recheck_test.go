package keys

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// rewrite replaces a store's file and reloads it, as a poll or SIGHUP would.
func rewrite(t *testing.T, s interface{ Reload() error }, path, data string) {
	t.Helper()
	writeAtomically(t, path, data)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
}

func wantRevoked(t *testing.T, err error, reason string, sentinel error) {
	t.Helper()
	var r *Revoked
	if !errors.As(err, &r) || !strings.Contains(r.Reason, reason) {
		t.Fatalf("Recheck = %v, want a *Revoked saying %q", err, reason)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("Recheck = %v (%v), want it to wrap %v", err, r.Err, sentinel)
	}
}

// What a listener keeps from an SSH login (the key and the address) is
// enough to ask again after a reload, and Recheck says what changed.
func TestRecheckKey(t *testing.T) {
	key, line := testKey(t, 1)
	path := filepath.Join(t.TempDir(), "authorized_keys")
	if err := os.WriteFile(path, []byte(`instances="web-*" `+line+" alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewKeyStore(Config{Path: path, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	remote := tcp("192.0.2.7")
	was, err := s.Authorize(key, remote)
	if err != nil {
		t.Fatal(err)
	}
	current := func() (Identity, error) { return s.Authorize(key, remote) }
	check := func() error { return Recheck(was, "web-1", current) }

	if err := check(); err != nil {
		t.Fatalf("unchanged file: %v", err)
	}
	rewrite(t, s, path, `instances="web-1,db" `+line+" renamed\n")
	if err := check(); err != nil {
		t.Fatalf("patterns that still match: %v", err)
	}
	rewrite(t, s, path, `instances="db" `+line+"\n")
	wantRevoked(t, check(), `your key may no longer use instance "web-1"`, nil)
	rewrite(t, s, path, `no-pty `+line+"\n")
	wantRevoked(t, check(), "your key may no longer open a terminal", nil)
	rewrite(t, s, path, `from="10.0.0.0/8" `+line+"\n")
	wantRevoked(t, check(), "your key's from= no longer allows your address", ErrFromMismatch)
	rewrite(t, s, path, `command="/bin/true" `+line+"\n")
	wantRevoked(t, check(), "now has an option termgate cannot honour", ErrKeyRefused)
	rewrite(t, s, path, "# emptied\n")
	wantRevoked(t, check(), "your key was removed from authorized_keys", ErrUnknownKey)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	wantRevoked(t, check(), "your key was removed", ErrUnknownKey)

	// A key that had no terminal and gains one stays (more rights).
	noPTY := was
	noPTY.Grants = []Grant{{NoPTY: true}}
	rewrite(t, s, path, line+"\n")
	if err := Recheck(noPTY, "web-1", current); err != nil {
		t.Fatalf("wider rights: %v", err)
	}
}

func TestRecheckCertificate(t *testing.T) {
	ca, other := testSigner(t, 100), testSigner(t, 101)
	user, userLine := testKey(t, 1)
	path := filepath.Join(t.TempDir(), "user_ca.pub")
	if err := os.WriteFile(path, []byte(caLine(t, ca)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewCAStore(Config{Path: path, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cert := testCert(t, user, ca, func(c *gossh.Certificate) {
		c.ValidAfter = uint64(time.Now().Add(-time.Hour).Unix())
		c.ValidBefore = uint64(time.Now().Add(time.Hour).Unix())
	})
	remote := tcp("192.0.2.7")
	was, err := s.AuthorizeCert(cert, remote)
	if err != nil {
		t.Fatal(err)
	}
	check := func() error {
		return Recheck(was, "web-1", func() (Identity, error) { return s.AuthorizeCert(cert, remote) })
	}
	if err := check(); err != nil {
		t.Fatal(err)
	}
	rewrite(t, s, path, caLine(t, ca)+"\n@revoked "+userLine+"\n")
	wantRevoked(t, check(), "your certificate or its CA was revoked", ErrCertRevoked)
	rewrite(t, s, path, caLine(t, other)+"\n")
	wantRevoked(t, check(), "your certificate's CA is no longer trusted", ErrCertUntrusted)
	if err := Recheck(was, "db", func() (Identity, error) { return was, nil }); err == nil || !strings.Contains(err.Error(), `your certificate may no longer use instance "db"`) {
		t.Fatalf("principals do not match: %v", err)
	}
}

// A token is re-checked by its identifier (TokenHash), which is all a login
// cookie carries.
func TestRecheckToken(t *testing.T) {
	const tok = "0123456789abcdefXYZ"
	path := filepath.Join(t.TempDir(), "api_token")
	if err := os.WriteFile(path, []byte(tok+" ci instances=web-*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewTokenStore(Config{Path: path, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	was, ok := s.Check(tok)
	if !ok {
		t.Fatal("token refused")
	}
	hash := TokenHash(tok)
	check := func() error { return Recheck(was, "web-1", func() (Identity, error) { return s.ByHash(hash) }) }
	if err := check(); err != nil {
		t.Fatal(err)
	}
	rewrite(t, s, path, tok+" ci instances=db\n")
	wantRevoked(t, check(), `your token may no longer use instance "web-1"`, nil)
	rewrite(t, s, path, tok+" ci read-only\n")
	wantRevoked(t, check(), "your token is now read-only", nil)
	rewrite(t, s, path, tok+" ci instance=web-*\n") // a typo: the line is refused
	wantRevoked(t, check(), "your token was removed from the token file", ErrUnknownToken)
	rewrite(t, s, path, "another-token-0123456789\n")
	wantRevoked(t, check(), "your token was removed from the token file", ErrUnknownToken)
	if _, err := s.ByHash(hash[:8]); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("a short identifier: %v", err)
	}
	// An observer whose token becomes read-write stays.
	ro := was
	ro.Grants = []Grant{{ReadOnly: true}}
	rewrite(t, s, path, tok+"\n")
	if err := Recheck(ro, "web-1", func() (Identity, error) { return s.ByHash(hash) }); err != nil {
		t.Fatalf("wider rights: %v", err)
	}
}
