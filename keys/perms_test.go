//go:build unix

package keys

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/fileperm"
)

// A file that grants access and that others may write is refused, not used
// (issue 9 item 12; before, it was loaded with a warning). At start the
// store does not open; on a reload the previous set stays in force and the
// log says why.
func TestInsecureFilesAreRefused(t *testing.T) {
	_, l1 := testKey(t, 1)
	_, l2 := testKey(t, 2)
	const tok1, tok2 = "token-one-0123456789", "token-two-0123456789"
	for _, mode := range []os.FileMode{0o666, 0o620, 0o602} {
		dir := t.TempDir()
		ak := filepath.Join(dir, "authorized_keys")
		tf := filepath.Join(dir, "api_token")
		ca := filepath.Join(dir, "user_ca.pub")
		for path, data := range map[string]string{ak: l1 + "\n", tf: tok1 + "\n", ca: caLine(t, testSigner(t, 100)) + "\n"} {
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := NewKeyStore(Config{Path: ak, Interval: -1}); !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "authorized keys refused, not used: "+ak+" is writable by group or others") {
			t.Errorf("mode %04o: NewKeyStore: %v", mode, err)
		}
		if _, err := NewTokenStore(Config{Path: tf, Interval: -1}); !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "API tokens refused, not used: "+tf) {
			t.Errorf("mode %04o: NewTokenStore: %v", mode, err)
		}
		if _, _, err := LoadOrCreateTokens(tf); !errors.Is(err, fileperm.ErrInsecure) {
			t.Errorf("mode %04o: LoadOrCreateTokens: %v", mode, err)
		}
		if _, err := NewCAStore(Config{Path: ca, Interval: -1}); !errors.Is(err, fileperm.ErrInsecure) {
			t.Errorf("mode %04o: NewCAStore: %v", mode, err)
		}
	}

	t.Run("a reload keeps the previous keys", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "authorized_keys")
		if err := os.WriteFile(path, []byte(l1+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, rec := newTestKeyStore(t, path, 10*time.Millisecond)
		// Someone opens the file up and adds their key.
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		appendFile(t, path, l2+" intruder\n")
		eventually(t, "the refusal to be logged", func() bool {
			return rec.count("ERROR reload failed; keeping the previous authorized keys err=authorized keys refused, not used: "+path+" is writable by group or others (mode 0666)") == 1
		})
		if authorized(s, 2, t) || !authorized(s, 1, t) {
			t.Fatal("the refused file was used")
		}
		if err := s.Reload(); !errors.Is(err, fileperm.ErrInsecure) {
			t.Fatalf("Reload() = %v", err)
		}
		// Fixed: the file is used again.
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the fixed file", func() bool { return authorized(s, 2, t) })
	})

	t.Run("a reload keeps the previous tokens", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "api_token")
		if err := os.WriteFile(path, []byte(tok1+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		rec := &logRecorder{}
		s, err := NewTokenStore(Config{Path: path, Logger: slog.New(rec), Interval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := os.Chmod(path, 0o646); err != nil {
			t.Fatal(err)
		}
		appendFile(t, path, tok2+"\n")
		eventually(t, "the refusal to be logged", func() bool {
			return rec.count("ERROR reload failed; keeping the previous API tokens err=API tokens refused, not used: "+path) == 1
		})
		if _, ok := s.Check(tok2); ok {
			t.Fatal("a token from the refused file works")
		}
		if _, ok := s.Check(tok1); !ok {
			t.Fatal("the previous token was dropped")
		}
	})

	t.Run("owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			// Only root can give a file away; fileperm's tests cover
			// the rule for every user.
			t.Log("not root: the ownership rule is tested in internal/fileperm")
			return
		}
		path := filepath.Join(t.TempDir(), "authorized_keys")
		if err := os.WriteFile(path, []byte(l1+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadAuthorizedKeys(path); !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "is owned by uid 4242") {
			t.Fatalf("LoadAuthorizedKeys: %v", err)
		}
	})

	t.Run("in a directory others may write", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "open")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "authorized_keys")
		if err := os.WriteFile(path, []byte(l1+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadAuthorizedKeys(path); !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), dir+" is on the path to "+path+" and writable by others") {
			t.Fatalf("LoadAuthorizedKeys: %v", err)
		}
	})
}

// The files the gateway creates pass its own checks whatever the umask.
func TestCreatedFilesPassTheChecks(t *testing.T) {
	for _, mask := range []int{0, 0o002, 0o022, 0o077} {
		dir := filepath.Join(t.TempDir(), "state") // made under the test's umask
		old := umask(mask)
		path := filepath.Join(dir, "api_token")
		_, created, err := LoadOrCreateTokens(path)
		umask(old)
		if err != nil || created == "" {
			t.Fatalf("umask %04o: LoadOrCreateTokens: %q, %v", mask, created, err)
		}
		if _, err := fileperm.Default().Dir(dir); err != nil {
			t.Errorf("umask %04o: state directory: %v", mask, err)
		}
		if _, err := fileperm.Default().File(path); err != nil {
			t.Errorf("umask %04o: token file: %v", mask, err)
		}
	}
}

// The host key and the cookie key are refused when another user owns them
// (before, only their mode was checked): that user could replace the host
// key, or read the cookie key, whatever the mode.
func TestSecretsOwnedByAnotherUserAreRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: only root can give a file away; internal/fileperm tests the rule for every user")
		return
	}
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	if _, _, err := LoadOrCreateHostKey(hostKey); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "cookie_key")
	if _, _, err := LoadOrCreateSecret(secret, 32); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{hostKey, secret} {
		if err := os.Chown(p, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := LoadOrCreateHostKey(hostKey); !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Errorf("host key: %v", err)
	}
	if _, _, err := LoadOrCreateSecret(secret, 32); !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Errorf("cookie key: %v", err)
	}
}
