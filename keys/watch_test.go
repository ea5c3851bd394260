package keys

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeAtomically replaces path the way editors do: write a new file, then
// rename it over the old one.
func writeAtomically(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func newTestKeyStore(t *testing.T, path string, interval time.Duration) (*KeyStore, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	s, err := NewKeyStore(Config{Path: path, Logger: slog.New(rec), Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rec
}

func authorized(s *KeyStore, n byte, t *testing.T) bool {
	k, _ := testKey(t, n)
	_, err := s.Authorize(k, tcp("127.0.0.1"))
	return err == nil
}

func TestKeyStoreReloadsAppendedKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "authorized_keys")
	_, l1 := testKey(t, 1)
	_, l2 := testKey(t, 2)
	if err := os.WriteFile(path, []byte(l1+" one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec := newTestKeyStore(t, path, 10*time.Millisecond)
	if !authorized(s, 1, t) || authorized(s, 2, t) {
		t.Fatal("initial set wrong")
	}
	if rec.count("INFO loaded authorized keys") != 1 || rec.count("entries=1") != 1 {
		t.Errorf("log = %q", rec.lines)
	}

	appendFile(t, path, l2+" two\n")
	eventually(t, "the appended key", func() bool { return authorized(s, 2, t) })
	if !authorized(s, 1, t) {
		t.Error("the first key was lost")
	}

	writeAtomically(t, path, l2+" two\n")
	eventually(t, "the replaced file", func() bool { return !authorized(s, 1, t) })
	if !authorized(s, 2, t) || s.Current().Len() != 1 {
		t.Error("the replacement's key is missing")
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removal", func() bool { return s.Current().Len() == 0 })
	if authorized(s, 2, t) {
		t.Error("a removed file still authorizes")
	}
	if rec.count("does not exist") == 0 {
		t.Errorf("the missing file was not logged: %q", rec.lines)
	}
}

func TestKeyStoreBrokenReloadKeepsOldKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "authorized_keys")
	_, l1 := testKey(t, 1)
	_, l2 := testKey(t, 2)
	if err := os.WriteFile(path, []byte(l1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec := newTestKeyStore(t, path, 10*time.Millisecond)

	// Atomically turn the file into something unreadable: a symlink to a
	// directory.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link, path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed reload to be logged", func() bool { return rec.count("ERROR reload failed") > 0 })
	if !authorized(s, 1, t) {
		t.Fatal("a failed reload dropped the keys")
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Reload() = %v, want the read error", err)
	}
	if n := rec.count("ERROR reload failed"); n != 1 {
		t.Errorf("the same failure was logged %d times, want once", n)
	}
	if !authorized(s, 1, t) {
		t.Fatal("a failed Reload dropped the keys")
	}

	writeAtomically(t, path, l2+"\n")
	eventually(t, "the repaired file", func() bool { return authorized(s, 2, t) })
	if authorized(s, 1, t) {
		t.Error("the old key survived the repair")
	}
}

func TestKeyStoreReloadWithoutPolling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "authorized_keys")
	_, l1 := testKey(t, 1)
	s, rec := newTestKeyStore(t, path, -1)
	if s.Current().Len() != 0 || rec.count("WARN authorized keys: "+path+" does not exist") != 1 {
		t.Fatalf("missing file: Len %d, log %q", s.Current().Len(), rec.lines)
	}
	if err := os.WriteFile(path, []byte(l1+"\ngarbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if authorized(s, 1, t) {
		t.Fatal("reloaded without polling or Reload")
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if !authorized(s, 1, t) {
		t.Fatal("Reload did not pick up the key")
	}
	if rec.count("line 2: skipped") != 1 || rec.count("INFO reloaded authorized keys") != 1 {
		t.Errorf("log = %q", rec.lines)
	}
	s.Close()
	s.Close() // idempotent
}

func TestNewKeyStoreErrors(t *testing.T) {
	if _, err := NewKeyStore(Config{}); err == nil {
		t.Error("no path: no error")
	}
	if _, err := NewKeyStore(Config{Path: t.TempDir()}); err == nil {
		t.Error("a directory: no error")
	}
	s, err := NewKeyStore(Config{Path: filepath.Join(t.TempDir(), "none")}) // nil Logger, default interval
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTokenStoreReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api_token")
	if err := os.WriteFile(path, []byte("first-token-0123456789 ci\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewTokenStore(Config{Path: path, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if id, ok := s.Check("first-token-0123456789"); !ok || id.Name != "ci" {
		t.Fatalf("Check = %+v, %v", id, ok)
	}
	appendFile(t, path, "second-token-0123456789 instances=web-*\n")
	eventually(t, "the appended token", func() bool {
		_, ok := s.Check("second-token-0123456789")
		return ok
	})
	id, _ := s.Check("second-token-0123456789")
	if id.Name != "token-2" || id.May("db") || !id.May("web-1") {
		t.Errorf("second token: %+v", id)
	}
	writeAtomically(t, path, "second-token-0123456789\n")
	eventually(t, "the revoked token", func() bool {
		_, ok := s.Check("first-token-0123456789")
		return !ok
	})
	if s.Current().Len() != 1 {
		t.Errorf("Len = %d", s.Current().Len())
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
}

// TestStoreConcurrentUse is for the race detector: readers run while the
// file keeps changing and Reload runs from another goroutine.
func TestStoreConcurrentUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "authorized_keys")
	_, l1 := testKey(t, 1)
	_, l2 := testKey(t, 2)
	if err := os.WriteFile(path, []byte(l1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := newTestKeyStore(t, path, time.Millisecond)
	k1, _ := testKey(t, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Every version of the file holds k1.
				if _, err := s.Authorize(k1, tcp("127.0.0.1")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Reload(); err != nil {
				errs <- err
				return
			}
		}
	}()
	for i := range 50 {
		data := l1 + "\n"
		if i%2 == 0 {
			data += l2 + "\n"
		}
		writeAtomically(t, path, data)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("while reloading: %v", err)
	}
}

func TestOnReloadRunsAfterEachSuccessfulReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "authorized_keys")
	_, l1 := testKey(t, 1)
	writeAtomically(t, path, l1+"\n")
	reloads := make(chan struct{}, 10)
	s, err := NewKeyStore(Config{Path: path, Interval: 10 * time.Millisecond, OnReload: func() { reloads <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case <-reloads:
		t.Fatal("OnReload ran for the initial load")
	case <-time.After(50 * time.Millisecond):
	}
	writeAtomically(t, path, "") // the key is removed
	select {
	case <-reloads:
	case <-time.After(5 * time.Second):
		t.Fatal("OnReload did not run after the file changed")
	}
	if authorized(s, 1, t) {
		t.Fatal("the removed key still works when OnReload runs")
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reloads:
	case <-time.After(time.Second):
		t.Fatal("OnReload did not run after Reload")
	}
}
