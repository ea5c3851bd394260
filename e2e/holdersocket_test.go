package e2e

import (
	"strings"
	"testing"
	"time"
)

// Issue 20, D3: a tmp cleaner (or rm -rf /tmp/*) inside the container
// deletes a durable session's holder socket, or the holder's whole
// directory. Before, every later attach to that instance hung with no
// answer and no log line, and a reset failed after 90 s. Now the holder
// notices and listens again: an attach from the same gateway, the adoption
// by a restarted gateway, an attach after it and a reset all complete
// within a bound, in the same shell (the reset: in a fresh one, with
// nothing of the old one left).
func TestDeletedHolderSocket(t *testing.T) {
	t.Parallel()
	cases := []struct{ suffix, rm string }{
		{"sock", "rm -f /tmp/.termgate/holder.sock"},
		{"dir", "rm -rf /tmp/.termgate"},
	}
	d := durableGateway(t, options{containers: []string{"sock", "dir", "reset"}})
	// bounded runs step and fails the test when it takes longer than
	// waitFor (it would hang before the fix).
	bounded := func(what string, step func()) {
		t.Helper()
		began := time.Now()
		step()
		if took := time.Since(began); took > waitFor {
			t.Errorf("%s took %v, want within %v", what, took, waitFor)
		}
	}
	pids := map[string]int{}
	for _, c := range cases {
		inst := d.name(c.suffix)
		s := d.attach(t, keyAdmin, inst, 80, 24)
		pids[c.suffix] = s.pid()
		expectDurable(t, d.gateway, inst, "", true)
		if out := dockerExec(t, inst, "ls /tmp/.termgate/holder.sock"); !strings.Contains(out, "holder.sock") {
			t.Fatalf("the holder of %s is not at /tmp/.termgate: %q", inst, out)
		}
		dockerExec(t, inst, c.rm)
		// The client attached all along keeps working.
		s.roundTrip()
		s.close()
	}
	// A reset right after the deletion (before the holder listens again:
	// it needs a new connection to the holder) waits for it, bounded.
	inst := d.name("reset")
	s := d.attach(t, keyAdmin, inst, 80, 24)
	old := s.pid()
	dockerExec(t, inst, "rm -f /tmp/.termgate/holder.sock")
	bounded("a reset right after the socket's deletion", func() {
		if r := d.ssh(t, keyAdmin, "me", "reset "+inst); r.code != 0 {
			t.Errorf("reset right after the socket's deletion: status %d, stderr %q", r.code, r.stderr)
		}
	})
	waitGone(t, inst, old)
	fresh, _ := d.session(t, inst)
	if got := sessionMarkers(t, inst); len(got) != 1 || got[0] != fresh.Session {
		t.Errorf("after the reset: processes of sessions %v, want only the fresh %s", got, fresh.Session)
	}

	for _, c := range cases {
		inst := d.name(c.suffix)
		eventually(t, "the holder of "+inst+" to listen again", func() bool {
			return strings.Contains(dockerExec(t, inst, "ls /tmp/.termgate/ 2>&1; true"), "holder.sock")
		})
		bounded("an attach from the same gateway", func() {
			s := d.attach(t, keyAdmin, inst, 80, 24)
			if got := s.pid(); got != pids[c.suffix] {
				t.Errorf("%s: attach after the socket's deletion reached shell %d, want %d", c.rm, got, pids[c.suffix])
			}
			s.close()
		})
	}

	d.kill9(t)
	d.restart(t)
	for _, c := range cases {
		inst := d.name(c.suffix)
		bounded("the adoption and an attach after a restart", func() {
			s := d.attach(t, keyAdmin, inst, 80, 24)
			if got := s.pid(); got != pids[c.suffix] {
				t.Errorf("%s: after a restart the attach reached shell %d, want the adopted %d", c.rm, got, pids[c.suffix])
			}
			s.close()
		})
		bounded("a reset", func() {
			if r := d.ssh(t, keyAdmin, "me", "reset "+inst); r.code != 0 {
				t.Errorf("%s: reset: status %d, stderr %q", c.rm, r.code, r.stderr)
			}
		})
		waitGone(t, inst, pids[c.suffix])
		s, _ := d.session(t, inst)
		eventually(t, "only the fresh session's shell in "+inst, func() bool {
			got := sessionMarkers(t, inst)
			return len(got) == 1 && got[0] == s.Session
		})
	}
}
