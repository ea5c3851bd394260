package e2e

import (
	"testing"
	"time"
)

// Scenario 5: with --idle-timeout 3s, a session nobody is attached to is
// reaped and its processes are killed; one with a client attached is never
// reaped.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	const idle = 3 * time.Second
	g := newGateway(t, options{idleTimeout: idle, containers: []string{"web-idle", "web-busy"}})
	idleName, busyName := g.name("web-idle"), g.name("web-busy")

	busy := g.attach(t, keyAdmin, busyName, 80, 24)
	busyPID := busy.pid()
	busyInfo := g.waitClients(t, busyName, 1)
	start := time.Now()

	gone := g.attach(t, keyAdmin, idleName, 80, 24)
	idlePID := gone.pid()
	gone.send("sleep 1001 &")
	gone.roundTrip()
	detached := time.Now() // no later than the gateway saw the client leave
	gone.close()
	g.waitClients(t, idleName, 0)

	eventually(t, "the unattached session to be reaped", func() bool {
		_, ok := g.session(t, idleName)
		return !ok
	})
	if took := time.Since(detached); took < idle {
		t.Errorf("the unattached session was reaped %s after its client left, before the %s idle timeout", took, idle)
	}
	waitGone(t, idleName, idlePID, "sleep 1001")
	if left := markedProcesses(t, idleName); len(left) > 0 {
		t.Errorf("the reaped session left processes: %q", left)
	}

	// The attached client has now been attached for more than the idle
	// timeout; hold it for more than twice the timeout in all.
	if rest := 2*idle + time.Second - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}
	info, ok := g.session(t, busyName)
	if !ok || info.Session != busyInfo.Session {
		t.Fatalf("after %s attached, the session is %+v (present %v), want %s still there", time.Since(start).Round(time.Second), info, ok, busyInfo.Session)
	}
	if pid := busy.pid(); pid != busyPID {
		t.Fatalf("the attached client's shell changed from %d to %d", busyPID, pid)
	}

	// Reattaching to the reaped instance starts a fresh session.
	w := g.ws(t, tokAdmin, idleName)
	if !w.attached.New {
		t.Errorf("attach after the reap: %s, want new:true", w.attached.raw)
	}
}
