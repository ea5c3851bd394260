package oidc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var testStateKey = StateKey([]byte("deployment secret for tests, 32b"))

func newStore(t *testing.T, dir string, key []byte) *Store {
	t.Helper()
	s, err := NewStore(StoreConfig{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keyRec(fp, sub, signin string, ttl time.Duration) KeyRecord {
	now := time.Now()
	return KeyRecord{Fingerprint: fp, Issuer: "https://idp", Subject: sub, Email: sub + "@example.com", Verified: true,
		Groups: []string{"ops"}, SigninID: signin, Remote: "10.0.0.9:5000", Approved: now, Expires: now.Add(ttl)}
}

// TestStoreSharedAndRestart: two gateways on one directory see each
// other's keys, logouts and forgotten keys at their next poll; a new
// store on the directory (a restart) finds everything as it was; the
// files are 0600.
func TestStoreSharedAndRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "signins")
	a, b := newStore(t, dir, testStateKey), newStore(t, dir, testStateKey)
	now := time.Now()
	if err := a.Remember(keyRec("SHA256:k1", "alice", "s1", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.Remember(keyRec("SHA256:k2", "alice", "s2", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.Remember(keyRec("SHA256:k3", "bob", "s3", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup("SHA256:k1", now); ok {
		t.Fatal("b knew k1 before polling")
	}
	b.Poll()
	if k, ok := b.Lookup("SHA256:k1", now); !ok || k.Email != "alice@example.com" || k.Subject != "alice" || k.Remote != "10.0.0.9:5000" {
		t.Fatalf("b after a poll: %+v %v", k, ok)
	}
	if got := b.KeysOf("https://idp", "alice", now); len(got) != 2 {
		t.Fatalf("alice's keys on b: %+v", got)
	}
	if got := b.KeysOf("https://other-idp", "alice", now); len(got) != 0 {
		t.Fatalf("another issuer's alice sees %+v", got)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		info, _ := e.Info()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", e.Name(), info.Mode())
		}
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", info.Mode())
	}

	// A logout on b forgets what its sign-in approved, on a at its poll.
	if err := b.Logout("s1", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !a.Poll() {
		t.Error("a's poll did not report the logout")
	}
	if _, ok := a.Lookup("SHA256:k1", now); ok || !a.LoggedOut("s1") {
		t.Fatal("a still lets k1 in after s1 logged out on b")
	}
	// Forgetting is per identity: bob cannot forget alice's key.
	if ok, _ := a.Forget("SHA256:k2", "https://idp", "bob"); ok {
		t.Fatal("bob forgot alice's key")
	}
	if ok, err := a.Forget("SHA256:k2", "https://idp", "alice"); !ok || err != nil {
		t.Fatalf("forget: %v %v", ok, err)
	}
	b.Poll()
	if _, ok := b.Lookup("SHA256:k2", now); ok {
		t.Fatal("b still lets a forgotten key in")
	}

	// A restart: a new store on the directory.
	c := newStore(t, dir, testStateKey)
	if _, ok := c.Lookup("SHA256:k3", now); !ok {
		t.Error("a restart lost bob's key")
	}
	if _, ok := c.Lookup("SHA256:k1", now); ok || !c.LoggedOut("s1") {
		t.Error("a restart forgot a logout")
	}
	if _, ok := c.Lookup("SHA256:k2", now); ok {
		t.Error("a restart brought a forgotten key back")
	}
}

// TestStoreForgedAndStale: records that grant nothing: signed with
// another key, tampered with, renamed, expired; a copy of a forgotten
// key's file put back; a key approved by a sign-in that logged out on
// another gateway meanwhile (a logout racing an approval).
func TestStoreForgedAndStale(t *testing.T) {
	dir := t.TempDir()
	a := newStore(t, dir, testStateKey)
	now := time.Now()
	write := func(key []byte, e envelope) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, e.Name), sealRecord(key, e), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(k KeyRecord) envelope {
		b, _ := json.Marshal(k)
		return envelope{Kind: kindKey, Name: keyFile(k.Fingerprint), Expires: k.Expires, Data: b}
	}
	// Another deployment's key.
	write(StateKey([]byte("another deployment's secret....")), rec(keyRec("SHA256:forged", "mallory", "m1", time.Hour)))
	// Tampered: a valid record's payload changed, MAC kept.
	good := sealRecord(testStateKey, rec(keyRec("SHA256:tamper", "alice", "s1", time.Hour)))
	bad := bytes.Replace(good, []byte("a"), []byte("b"), 1)
	_ = os.WriteFile(filepath.Join(dir, keyFile("SHA256:tamper")), bad, 0o600)
	// A valid record under another key's file name.
	e := rec(keyRec("SHA256:renamed", "alice", "s1", time.Hour))
	_ = os.WriteFile(filepath.Join(dir, keyFile("SHA256:other")), sealRecord(testStateKey, e), 0o600)
	// Stale: expired.
	stale := keyRec("SHA256:stale", "alice", "s1", -time.Minute)
	write(testStateKey, rec(stale))
	// An envelope that says it lasts longer than the key inside it.
	long := keyRec("SHA256:long", "alice", "s1", time.Minute)
	le := rec(long)
	le.Expires = now.Add(24 * time.Hour)
	write(testStateKey, le)
	a.Poll()
	for _, fp := range []string{"SHA256:forged", "SHA256:tamper", "SHA256:renamed", "SHA256:other", "SHA256:stale", "SHA256:long"} {
		if k, ok := a.Lookup(fp, now); ok {
			t.Errorf("%s grants %+v", fp, k)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, keyFile("SHA256:stale"))); !os.IsNotExist(err) {
		t.Errorf("the stale record is still there: %v", err)
	}

	// A forgotten key's file put back (a backup restored, a replay).
	if err := a.Remember(keyRec("SHA256:back", "alice", "s2", time.Hour)); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(filepath.Join(dir, keyFile("SHA256:back")))
	if ok, _ := a.Forget("SHA256:back", "", ""); !ok {
		t.Fatal("forget")
	}
	_ = os.WriteFile(filepath.Join(dir, keyFile("SHA256:back")), saved, 0o600)
	a.Poll()
	if _, ok := a.Lookup("SHA256:back", now); ok {
		t.Error("a forgotten key's file put back lets it in again")
	}

	// A logout racing an approval: the logout lands on b first, the
	// approval on a before a has polled it; at a's poll the key goes.
	b := newStore(t, dir, testStateKey)
	if err := b.Logout("s3", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.Remember(keyRec("SHA256:race", "alice", "s3", time.Hour)); err != nil {
		t.Fatal(err) // a has not seen the logout yet
	}
	if !a.Poll() {
		t.Error("the poll did not report the logout")
	}
	if _, ok := a.Lookup("SHA256:race", now); ok {
		t.Error("a key approved by a logged-out sign-in lets in")
	}
	b.Poll()
	if _, ok := b.Lookup("SHA256:race", now); ok {
		t.Error("b lets in a key approved by a sign-in that logged out on b")
	}
	// Once seen, a logged-out sign-in approves nothing.
	if err := a.Remember(keyRec("SHA256:late", "alice", "s3", time.Hour)); err != ErrSignedOut {
		t.Errorf("an approval after the logout: %v", err)
	}
}

// TestStorePoller: the poller reports a logout from another gateway
// through OnChange within a few seconds, and Close waits for it.
func TestStorePoller(t *testing.T) {
	dir := t.TempDir()
	var changes atomic.Int32
	a, err := NewStore(StoreConfig{Dir: dir, Key: testStateKey, OnChange: func() { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	defer a.Close()
	b := newStore(t, dir, testStateKey)
	if err := b.Remember(keyRec("SHA256:p", "alice", "s1", time.Hour)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := a.Lookup("SHA256:p", time.Now()); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a never saw b's key")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = b.Logout("s1", time.Now().Add(time.Hour))
	for changes.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no OnChange for b's logout within 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, ok := a.Lookup("SHA256:p", time.Now()); ok {
		t.Fatal("the key outlived its sign-in's logout")
	}
}

func TestStoreNeedsWritableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	ro := t.TempDir()
	_ = os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o700)
	if _, err := NewStore(StoreConfig{Dir: filepath.Join(ro, "signins"), Key: testStateKey}); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("a read-only directory: %v", err)
	}
}

// FuzzOpenRecord: a record file is untrusted input (anyone who can write
// the directory); openRecord never panics, and nothing but a record
// sealed with the key opens.
func FuzzOpenRecord(f *testing.F) {
	e := envelope{Kind: kindLogout, Name: idFile(kindLogout, "x"), Expires: time.Unix(1e9, 0), Data: json.RawMessage(`"x"`)}
	f.Add(sealRecord(testStateKey, e), e.Name)
	f.Add([]byte("."), "r-1")
	f.Add([]byte("e30.AAAA"), "k-")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		got, err := openRecord(testStateKey, name, data)
		if err != nil {
			return
		}
		if !bytes.Equal(bytes.TrimSpace(data), bytes.TrimSpace(sealRecord(testStateKey, got))) && got.Name != name {
			t.Fatalf("opened %+v under %q", got, name)
		}
	})
}

// TestDirRecordsReadsOnlyChanges: a Load reads again only the files whose
// modification time or size changed (every gateway loads once a second),
// and its version stays while nothing does.
func TestDirRecordsReadsOnlyChanges(t *testing.T) {
	d, err := NewDirRecords(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	_ = d.Put(ctx, "k-1", []byte("one"))
	_ = d.Put(ctx, "k-2", []byte("two"))
	r1, v1, _ := d.Load(ctx)
	r2, v2, _ := d.Load(ctx)
	if &r1["k-1"][0] != &r2["k-1"][0] || v1 != v2 {
		t.Error("an unchanged file was read again, or the version changed")
	}
	_ = d.Put(ctx, "k-2", []byte("two, longer"))
	r3, v3, _ := d.Load(ctx)
	if string(r3["k-2"]) != "two, longer" || v3 == v2 || &r3["k-1"][0] != &r1["k-1"][0] {
		t.Errorf("after a change: %q, version %q→%q", r3, v2, v3)
	}
}

// failingRecords fails its loads while fail is set.
type failingRecords struct {
	*MemRecords
	fail atomic.Bool
}

func (f *failingRecords) Load(ctx context.Context) (map[string][]byte, string, error) {
	if f.fail.Load() {
		return nil, "", errors.New("the API server is away")
	}
	return f.MemRecords.Load(ctx)
}

// TestStoreLoadFailures: records that cannot be read keep the state as it
// was (nothing taken away, nothing granted), are logged once and not
// every second, and the state follows them again when they come back.
func TestStoreLoadFailures(t *testing.T) {
	var logs bytes.Buffer
	r := &failingRecords{MemRecords: NewMemRecords()}
	a, err := NewStore(StoreConfig{Records: r, Key: testStateKey, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := newStoreOn(t, r)
	if err := a.Remember(keyRec("SHA256:f", "alice", "s1", time.Hour)); err != nil {
		t.Fatal(err)
	}
	r.fail.Store(true)
	_ = b.Logout("s1", time.Now().Add(time.Hour))
	for range 3 {
		a.Poll()
	}
	if _, ok := a.Lookup("SHA256:f", time.Now()); !ok {
		t.Error("a failing load took a key away")
	}
	if n := strings.Count(logs.String(), "not read"); n != 1 {
		t.Errorf("%d warnings for three failed loads:\n%s", n, logs.String())
	}
	r.fail.Store(false)
	if !a.Poll() {
		t.Error("the logout made while loads failed was not reported")
	}
	if _, ok := a.Lookup("SHA256:f", time.Now()); ok || !strings.Contains(logs.String(), "read again") {
		t.Errorf("after the records came back: the key still lets in, or no log:\n%s", logs.String())
	}
}

func newStoreOn(t *testing.T, r Records) *Store {
	t.Helper()
	s, err := NewStore(StoreConfig{Records: r, Key: testStateKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// slowPut holds every Put until released: a Forget or Logout whose
// tombstone is still being written.
type slowPut struct {
	Records
	held    chan struct{} // a Put waits
	release chan struct{}
}

func (s *slowPut) Put(ctx context.Context, name string, data []byte) error {
	s.held <- struct{}{}
	<-s.release
	return s.Records.Put(ctx, name, data)
}

// TestStorePollKeepsATombstoneBeingWritten: a poll that runs while a
// Forget or a Logout writes its tombstone does not bring the key back
// (the key's record is still there; the tombstone's not yet).
func TestStorePollKeepsATombstoneBeingWritten(t *testing.T) {
	for _, how := range []string{"forget", "logout"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "signins")
			recs, err := NewDirRecords(dir)
			if err != nil {
				t.Fatal(err)
			}
			slow := &slowPut{Records: recs, held: make(chan struct{}), release: make(chan struct{})}
			s, err := NewStore(StoreConfig{Records: slow, Key: testStateKey})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			done := make(chan error, 1)
			go func() { <-slow.held; slow.release <- struct{}{} }() // the key's own Put goes through
			if err := s.Remember(keyRec("SHA256:k1", "alice", "s1", time.Hour)); err != nil {
				t.Fatal(err)
			}
			go func() {
				if how == "forget" {
					_, err := s.Forget("SHA256:k1", "", "")
					done <- err
				} else {
					done <- s.Logout("s1", now.Add(time.Hour))
				}
			}()
			<-slow.held // the tombstone is being written
			s.Poll()
			if _, ok := s.Lookup("SHA256:k1", now); ok {
				t.Errorf("a poll during the %s brought the key back", how)
			}
			if got := s.KeysOf("https://idp", "alice", now); len(got) != 0 {
				t.Errorf("a poll during the %s lists %+v", how, got)
			}
			slow.release <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			s.Poll()
			if _, ok := s.Lookup("SHA256:k1", now); ok {
				t.Errorf("the key is back after the %s", how)
			}
		})
	}
}
