package sshd

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/oidc"
)

// TestMixedGrantsOverSSH is the round-4 review's failing test, made to
// assert: alice's policies give read-write on web* and read-only on db*,
// and over SSH she may reset web1 but neither reset nor run a command in
// db1; whoami says which is which.
func TestMixedGrantsOverSSH(t *testing.T) {
	f, si := signInFixture(t, 2*time.Second)
	si.Policies = keys.Policies{
		{Groups: []string{"ops"}, Instances: []string{"web*"}},
		{Groups: []string{"ops"}, Instances: []string{"db*"}, ReadOnly: true},
	}
	codes := make(chan string, 2)
	var mu sync.Mutex
	var banner strings.Builder
	done := make(chan error, 1)
	go func() {
		c, err := f.kiClient("stranger", codes, &banner, &mu)
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	approve(t, si, <-codes, "signin-1", oidc.Approved{Email: "alice@example.com", EmailVerified: true, Groups: []string{"ops"}, Expires: time.Now().Add(time.Hour)})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := f.run(t, "stranger", gatewayUser, "reset db1"); r.code != 1 || !strings.HasPrefix(r.stderr, "reset refused: this sign-in is read-only on db1") {
		t.Errorf("reset db1 (read-only there): code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, "stranger", "db1", "id"); r.code != 1 || !strings.Contains(r.stderr, "command refused: this sign-in is read-only on db1") {
		t.Errorf("a command in db1: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, "stranger", gatewayUser, "reset web1"); r.code != 0 || !strings.HasPrefix(r.stdout, "reset web1: new session") {
		t.Errorf("reset web1 (read-write there): code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r := f.run(t, "stranger", gatewayUser, "whoami")
	if !strings.Contains(r.stdout, "instances web*: read-write; instances db*: read-only") {
		t.Errorf("whoami: %q", r.stdout)
	}
}
