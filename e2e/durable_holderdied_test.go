package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A holder that dies (issue 20 D1): killed with kill -9 inside the
// container, with a gateway attached or with none running. Its shell goes
// with it; the jobs the shell left (one that ignores SIGHUP, as nohup
// does, and a setsid one) must not run on beside the next shell.

const diedJobs = "(trap '' HUP; exec sleep 3131) >/dev/null 2>&1 & setsid sleep 3232 &"

var diedSleeps = []string{"sleep 3131", "sleep 3232"}

// killHolder kills the container's holder daemon (the serve process that
// is no start exec's) with SIGKILL.
func killHolder(t *testing.T, name string) {
	t.Helper()
	for _, p := range findProcesses(t, name, -1, "holder-") {
		if strings.Contains(p.args, " serve ") && !strings.Contains(p.args, "--attach") {
			dockerExec(t, name, "kill -9 "+strconv.Itoa(p.pid))
			return
		}
	}
	t.Fatalf("no holder daemon in %s: %v", name, processes(t, name))
}

// expectCleanShell attaches and checks that the shell is a new one with no
// job of the old.
func expectCleanShell(t *testing.T, d *durableGW, name string, old int) {
	t.Helper()
	s := d.attach(t, keyAdmin, name, 80, 24)
	if got := s.pid(); got == old {
		t.Fatalf("the reconnect landed in the old shell %d", old)
	}
	s.send("jobs; echo jo''bs-listed")
	out := s.expect(`(?s)(.*)jobs-listed`)[1]
	if strings.Contains(out, "sleep 3") {
		t.Fatalf("the new shell lists the old jobs: %q", out)
	}
	if left := findProcesses(t, name, -1, diedSleeps...); len(left) > 0 {
		t.Fatalf("the dead holder's jobs run beside the new shell: %v", left)
	}
}

func TestDurableHolderKilledEndsItsJobs(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	name := d.name("web-1")
	s := d.attach(t, keyAdmin, name, 80, 24)
	pid := s.pid()
	s.send(diedJobs)
	s.roundTrip()
	expectJob(t, name, diedSleeps[0])
	expectJob(t, name, diedSleeps[1])

	killHolder(t, name)
	_ = s.wait()
	if notice := anyNotice(s); !regexp.MustCompile(`\[termgate\].*holder died; the shell ended`).MatchString(notice) {
		t.Errorf("the SSH client was not told the holder died: %q", notice)
	}
	if strings.Contains(anyNotice(s), "keeps running") {
		t.Errorf("the SSH client was told the shell keeps running: %q", anyNotice(s))
	}
	waitGone(t, name, -1, diedSleeps...)
	expectCleanShell(t, d, name, pid)
}

func TestDurableHolderKilledWithoutGatewayEndsItsJobs(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	name := d.name("web-1")
	s := d.attach(t, keyAdmin, name, 80, 24)
	pid := s.pid()
	s.send(diedJobs)
	s.roundTrip()
	d.sigterm(t) // durable: the shell and its jobs keep running
	_ = s.wait()
	expectJob(t, name, diedSleeps[0])
	expectJob(t, name, diedSleeps[1])

	killHolder(t, name) // while no gateway runs
	d.restart(t)        // its start-up sweep ends the jobs
	waitGone(t, name, -1, diedSleeps...)
	expectCleanShell(t, d, name, pid)
}
