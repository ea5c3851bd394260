// Package recordstest checks an oidc.Records implementation the same way
// for every one of them: the directory and memory ones in oidc, the
// Kubernetes Secret in backend/kubernetes (against a real cluster).
package recordstest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termgate/termgate/oidc"
)

// Pair returns two views of one empty storage, as two gateways (two
// replicas, two processes) have them.
type Pair func(t *testing.T) (oidc.Records, oidc.Records)

// Key is the deployment key the tests seal with.
var Key = oidc.StateKey([]byte("recordstest deployment secret, 32"))

// Run runs every check; each gets a fresh storage from pair.
func Run(t *testing.T, pair Pair) {
	t.Run("Records", func(t *testing.T) { testRecords(t, pair) })
	t.Run("Shared", func(t *testing.T) { testShared(t, pair) })
	t.Run("Forged", func(t *testing.T) { testForged(t, pair) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, pair) })
	t.Run("Poller", func(t *testing.T) { testPoller(t, pair) })
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// testRecords: Put, Load and Delete, and the version.
func testRecords(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	recs, v0, err := a.Load(c)
	if err != nil || len(recs) != 0 {
		t.Fatalf("an empty storage loads %d records, %v", len(recs), err)
	}
	n1, n2 := "r-"+fmt.Sprintf("%032x", 1), "k-"+fmt.Sprintf("%032x", 2)
	if err := a.Put(c, n1, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(c, n2, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(c, n1, []byte("one again\n")); err != nil {
		t.Fatal(err)
	}
	recs, v1, err := b.Load(c)
	if err != nil || len(recs) != 2 || string(recs[n1]) != "one again\n" || string(recs[n2]) != "two\n" {
		t.Fatalf("after the puts: %q, %v", recs, err)
	}
	if v1 != "" && v1 == v0 {
		t.Errorf("the version stayed %q through puts", v1)
	}
	if _, v, _ := b.Load(c); v1 != "" && v != v1 {
		t.Errorf("the version changed from %q to %q with nothing written", v1, v)
	}
	if err := b.Delete(c, n1, "f-"+fmt.Sprintf("%032x", 3)); err != nil {
		t.Fatalf("delete (one name not there): %v", err)
	}
	recs, v2, err := a.Load(c)
	if err != nil || len(recs) != 1 || recs[n1] != nil {
		t.Fatalf("after the delete: %q, %v", recs, err)
	}
	if v2 != "" && v2 == v1 {
		t.Errorf("the version stayed %q through a delete", v2)
	}
	if err := a.Delete(c); err != nil {
		t.Errorf("deleting nothing: %v", err)
	}
}

func store(t *testing.T, r oidc.Records, key []byte, onChange func()) *oidc.Store {
	t.Helper()
	s, err := oidc.NewStore(oidc.StoreConfig{Records: r, Key: key, OnChange: onChange})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func keyRec(fp, sub, signin string) oidc.KeyRecord {
	now := time.Now()
	return oidc.KeyRecord{Fingerprint: fp, Issuer: "https://idp", Subject: sub, Email: sub + "@example.com", Verified: true,
		Groups: []string{"ops"}, SigninID: signin, Remote: "10.0.0.9:5000", Approved: now, Expires: now.Add(time.Hour)}
}

// testShared: two stores see each other's keys, logouts and forgotten
// keys at their next poll, and a new store (a restart) finds it all.
func testShared(t *testing.T, pair Pair) {
	ra, rb := pair(t)
	a, b := store(t, ra, Key, nil), store(t, rb, Key, nil)
	now := time.Now()
	for _, k := range []oidc.KeyRecord{keyRec("SHA256:k1", "alice", "s1"), keyRec("SHA256:k2", "alice", "s2"), keyRec("SHA256:k3", "bob", "s3")} {
		if err := a.Remember(k); err != nil {
			t.Fatal(err)
		}
	}
	b.Poll()
	if k, ok := b.Lookup("SHA256:k1", now); !ok || k.Email != "alice@example.com" {
		t.Fatalf("b does not see a's key: %+v %v", k, ok)
	}
	if err := b.Logout("s1", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !a.Poll() {
		t.Error("a's poll did not report b's logout")
	}
	if _, ok := a.Lookup("SHA256:k1", now); ok || !a.LoggedOut("s1") {
		t.Fatal("a still lets k1 in after its sign-in logged out on b")
	}
	if ok, err := a.Forget("SHA256:k2", "https://idp", "alice"); !ok || err != nil {
		t.Fatalf("forget: %v %v", ok, err)
	}
	b.Poll()
	if _, ok := b.Lookup("SHA256:k2", now); ok {
		t.Fatal("b still lets a key forgotten on a in")
	}
	c := store(t, rb, Key, nil) // a restart
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

// testForged: a record sealed with another deployment's key, or edited,
// grants nothing; a forgotten key's record put back does not come back.
func testForged(t *testing.T, pair Pair) {
	ra, rb := pair(t)
	c := ctx(t)
	a := store(t, ra, Key, nil)
	// The records' names are hashes: each is found as the one new record.
	added := func(remember func()) (string, []byte) {
		t.Helper()
		before, _, err := ra.Load(c)
		if err != nil {
			t.Fatal(err)
		}
		remember()
		after, _, err := ra.Load(c)
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range after {
			if _, old := before[name]; !old {
				return name, data
			}
		}
		t.Fatal("no new record")
		return "", nil
	}
	remember := func(s *oidc.Store, fp string) func() {
		return func() {
			if err := s.Remember(keyRec(fp, "alice", "s1")); err != nil {
				t.Fatal(err)
			}
		}
	}
	other := store(t, rb, oidc.StateKey([]byte("another deployment's secret, 32b")), nil)
	added(remember(other, "SHA256:forged"))
	editedName, edited := added(remember(a, "SHA256:edited"))
	backName, back := added(remember(a, "SHA256:back"))

	// Edited: one character of the payload changed, the MAC kept.
	edited = bytes.Clone(edited)
	edited[10] ^= 1
	if err := rb.Put(c, editedName, edited); err != nil {
		t.Fatal(err)
	}
	// Forgotten, then its record put back (a backup restored, a replay).
	if ok, _ := a.Forget("SHA256:back", "", ""); !ok {
		t.Fatal("forget")
	}
	if err := rb.Put(c, backName, back); err != nil {
		t.Fatal(err)
	}
	b := store(t, rb, Key, nil)
	a.Poll()
	now := time.Now()
	for _, s := range []*oidc.Store{a, b} {
		for _, fp := range []string{"SHA256:forged", "SHA256:edited", "SHA256:back"} {
			if k, ok := s.Lookup(fp, now); ok {
				t.Errorf("%s grants %+v", fp, k)
			}
		}
	}
}

// testConcurrent: remembered keys written at once from two stores are all
// kept (a store that updates one object must retry its conflicts).
func testConcurrent(t *testing.T, pair Pair) {
	ra, rb := pair(t)
	a, b := store(t, ra, Key, nil), store(t, rb, Key, nil)
	const each = 12
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range each {
		for j, s := range []*oidc.Store{a, b} {
			wg.Go(func() {
				if err := s.Remember(keyRec(fmt.Sprintf("SHA256:c%d-%d", j, i), "alice", "s1")); err != nil {
					t.Errorf("remember %d on %d: %v", i, j, err)
					failed.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if failed.Load() > 0 {
		return
	}
	c := store(t, ra, Key, nil)
	now := time.Now()
	if got := len(c.KeysOf("https://idp", "alice", now)); got != 2*each {
		t.Errorf("%d of the %d keys written at once are kept", got, 2*each)
	}
}

// testPoller: with both stores polling, a key remembered on one lets in
// on the other, and a logout on the other holds on the first (OnChange),
// each within 5 s (the contract); it logs how long they took.
func testPoller(t *testing.T, pair Pair) {
	ra, rb := pair(t)
	var changes atomic.Int32
	a := store(t, ra, Key, func() { changes.Add(1) })
	b := store(t, rb, Key, nil)
	a.Start()
	b.Start()
	start := time.Now()
	if err := a.Remember(keyRec("SHA256:p", "alice", "s1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to see a's key", func() bool { _, ok := b.Lookup("SHA256:p", time.Now()); return ok })
	t.Logf("a key remembered on a lets in on b after %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := b.Logout("s1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's OnChange for b's logout", func() bool { return changes.Load() > 0 })
	t.Logf("a logout on b holds on a after %v", time.Since(start).Round(time.Millisecond))
	if _, ok := a.Lookup("SHA256:p", time.Now()); ok {
		t.Fatal("the key outlived its sign-in's logout")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 5 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
