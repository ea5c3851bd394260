package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/termgate/termgate/oidc"
	"github.com/termgate/termgate/oidc/recordstest"
)

// secretRecords is a SecretRecords on the run's namespace, with a client
// of its own (as another replica has).
func secretRecords(t *testing.T, cfg *rest.Config, name string) *SecretRecords {
	t.Helper()
	r, err := NewSecretRecords(cfg, testNS, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The seam's checks (oidc/recordstest) on a real Secret, seen by two
// SecretRecords as two replicas see it: each other's remembered keys and
// logouts within 5 s, forged and edited records granting nothing,
// concurrent remembers from both all kept (conflicts retried).
func TestSecretRecords(t *testing.T) {
	t.Parallel()
	needCluster(t)
	recordstest.Run(t, func(t *testing.T) (oidc.Records, oidc.Records) {
		name := "tg-signins-" + randomHex(3)
		return secretRecords(t, cluster.REST, name), secretRecords(t, cluster.REST, name)
	})
}

// TestSecretRecordsFull: near the Secret's 1 MiB no new key is
// remembered, with an error that says why, while logouts still go in.
func TestSecretRecordsFull(t *testing.T) {
	t.Parallel()
	needCluster(t)
	r := secretRecords(t, cluster.REST, "tg-signins-"+randomHex(3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	filler := make([]byte, 104<<10)
	for i := range keyRoom / len(filler) {
		if err := r.Put(ctx, fmt.Sprintf("k-%032x", i), filler); err != nil {
			t.Fatalf("filler %d: %v", i, err)
		}
	}
	s, err := oidc.NewStore(oidc.StoreConfig{Records: r, Key: recordstest.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	err = s.Remember(oidc.KeyRecord{Fingerprint: "SHA256:full", Issuer: "https://idp", Subject: "alice", SigninID: "s1",
		Groups: []string{strings.Repeat("g", 2000)}, Approved: now, Expires: now.Add(time.Hour)})
	if !errors.Is(err, oidc.ErrFull) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("a key past the room for keys: %v", err)
	}
	if _, ok := s.Lookup("SHA256:full", now); ok {
		t.Error("a key refused for room lets in")
	}
	if err := s.Logout("s1", now.Add(time.Hour)); err != nil {
		t.Fatalf("a logout in a Secret full of keys: %v", err)
	}
	// Past everything, even a logout is refused rather than the Secret.
	if err := r.Put(ctx, fmt.Sprintf("r-%032x", 1), make([]byte, secretRoom)); !errors.Is(err, oidc.ErrFull) {
		t.Errorf("a record past the Secret's room: %v", err)
	}
}

// TestSecretRecordsRBAC: get and update on the one Secret (resourceNames)
// are all the gateway needs when the Secret is made beforehand, as
// deploy/kubernetes does; without update CheckAccess says what to grant.
func TestSecretRecordsRBAC(t *testing.T) {
	t.Parallel()
	needCluster(t)
	name := "tg-signins-" + randomHex(3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := clusterCS.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rule := func(verbs ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: verbs}}
	}
	r := secretRecords(t, serviceAccount(t, rule("get", "update")), name)
	if err := r.CheckAccess(ctx); err != nil {
		t.Fatalf("get and update on the Secret: %v", err)
	}
	s, err := oidc.NewStore(oidc.StoreConfig{Records: r, Key: recordstest.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	if err := s.Remember(oidc.KeyRecord{Fingerprint: "SHA256:rbac", SigninID: "s1", Approved: now, Expires: now.Add(time.Hour)}); err != nil {
		t.Fatalf("remember with get and update: %v", err)
	}
	if err := s.Logout("s1", now.Add(time.Hour)); err != nil {
		t.Fatalf("logout with get and update: %v", err)
	}

	ro := secretRecords(t, serviceAccount(t, rule("get")), name)
	if err := ro.CheckAccess(ctx); err == nil || !strings.Contains(err.Error(), "may not update the Secret") {
		t.Errorf("without update: %v", err)
	}
	other := secretRecords(t, serviceAccount(t, rule("get", "update")), "tg-signins-other")
	if _, err := oidc.NewStore(oidc.StoreConfig{Records: other, Key: recordstest.Key}); err == nil || !strings.Contains(err.Error(), "RBAC") {
		t.Errorf("another Secret than the one granted: %v", err)
	}
}

// TestSecretRecordsConflicts: two replicas writing at once conflict, and
// the retries keep every record.
func TestSecretRecordsConflicts(t *testing.T) {
	t.Parallel()
	needCluster(t)
	name := "tg-signins-" + randomHex(3)
	a, b := secretRecords(t, cluster.REST, name), secretRecords(t, cluster.REST, name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const each = 20
	var wg sync.WaitGroup
	for i := range each {
		for j, r := range []*SecretRecords{a, b} {
			wg.Go(func() {
				if err := r.Put(ctx, fmt.Sprintf("k-%031x%d", i, j), []byte("x")); err != nil {
					t.Errorf("put %d on %d: %v", i, j, err)
				}
			})
		}
	}
	wg.Wait()
	recs, _, err := a.Load(ctx)
	if err != nil || len(recs) != 2*each {
		t.Fatalf("%d of %d records written at once are kept (%v)", len(recs), 2*each, err)
	}
	t.Logf("%d writes, %d retried after a conflict", 2*each, a.conflicts.Load()+b.conflicts.Load())
	if a.conflicts.Load()+b.conflicts.Load() == 0 {
		t.Error("no write conflicted: the test shows nothing about the retries")
	}
}
