package e2e

import (
	"strconv"
	"testing"
)

// Scenario 1: a client that disconnects and comes back lands in the same
// shell, which kept running (with its background job) while nobody was
// attached, and gets the earlier output replayed.
func TestReconnectLandsInSameShell(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}})
	name := g.name("web-1")

	first := g.attach(t, keyAdmin, name, 100, 30)
	first.send("echo PID=$$")
	pid := first.expect(`PID=(\d+)`)[1]
	first.send("sleep 1001 &")
	first.roundTrip()
	first.close()

	g.waitClients(t, name, 0)
	if len(findProcesses(t, name, atoi(t, pid))) == 0 {
		t.Fatalf("with nobody attached, shell %s is gone from %s: %v", pid, name, processes(t, name))
	}
	if len(findProcesses(t, name, -1, "sleep 1001")) == 0 {
		t.Fatalf("with nobody attached, the background job is gone from %s: %v", name, processes(t, name))
	}

	second := g.attach(t, keyAdmin, name, 100, 30)
	// The replay comes before anything typed now.
	second.expect(`PID=` + pid + `\b`)
	second.send("echo PID=$$")
	if again := second.expect(`PID=(\d+)`)[1]; again != pid {
		t.Fatalf("after reconnecting, the shell's PID is %s, want %s (the same shell)", again, pid)
	}
	second.send("jobs")
	second.expect(`sleep 1001`)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
