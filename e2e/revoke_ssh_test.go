package e2e

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// revokeWithin is the contract's bound: a removed key's clients are
// disconnected within 5 seconds of the file change.
const revokeWithin = 5 * time.Second

// A key removed from authorized_keys while attached is disconnected, with
// the "[termgate] access revoked" notice and exit status 1, within 5
// seconds of the file change (the gateway reloads and rechecks every
// attached client); another key's client stays (issue 9 item 2, SSH).
func TestSSHRevocationEndsAttach(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}})
	name := g.name("web-1")
	web := g.attach(t, keyWeb, name, 80, 24)
	web.roundTrip()
	admin := g.attach(t, keyAdmin, name, 80, 24)
	admin.roundTrip()

	changed := time.Now()
	dropLines(t, filepath.Join(g.stateDir, "authorized_keys"), " "+keyWeb+"\n")
	select {
	case <-web.ended:
	case <-time.After(revokeWithin):
		t.Fatalf("the removed key is still attached %v after the file changed; stderr %q", revokeWithin, web.errOut.String())
	}
	t.Logf("disconnected %v after the file changed", time.Since(changed).Round(time.Millisecond))
	web.expectErr(`\[termgate\] access revoked: this key is no longer authorized; disconnected`)
	var exit *gossh.ExitError
	if err := web.wait(); !errors.As(err, &exit) || exit.ExitStatus() != 1 {
		t.Fatalf("the revoked session ended with %v, want exit status 1", err)
	}
	admin.roundTrip()
}
