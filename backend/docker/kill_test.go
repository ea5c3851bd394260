package docker

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

func sleeps(args ...string) func(proc) bool {
	return func(p proc) bool {
		for _, a := range args {
			if strings.Contains(p.Args, "sleep "+a) {
				return true
			}
		}
		return false
	}
}

func inSession(sid int) func(proc) bool { return func(p proc) bool { return p.SID == sid } }

func TestKillEndsBackgroundJobs(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.DefaultSize)

	tm.write(t, "sleep 1001 & setsid sleep 1002 &\n")
	pid := shellPID(t, tm)
	if got := live(t, name, sleeps("1001", "1002")); len(got) != 2 {
		t.Fatalf("jobs before Kill: %+v", got)
	}

	began := time.Now()
	if err := tm.p.Kill(testContext(t)); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	t.Logf("Kill took %v", time.Since(began))
	tm.waitEOF(t, 5*time.Second)

	if left := live(t, name, sleeps("1001", "1002")); len(left) != 0 {
		t.Errorf("jobs left after Kill: %+v", left)
	}
	if left := live(t, name, inSession(pid)); len(left) != 0 {
		t.Errorf("processes of session %d left after Kill: %+v", pid, left)
	}
	if left := live(t, name, func(p proc) bool { return p.PID == 1 || strings.Contains(p.Args, "sleep 1000000") }); len(left) != 2 {
		t.Errorf("Kill touched the container's own processes: %+v", procs(t, name))
	}
	code, err := tm.p.Wait(testContext(t))
	if err != nil || code != 137 {
		t.Errorf("Wait after Kill = %d, %v; want 137 (SIGKILL)", code, err)
	}
	if err := tm.p.Kill(testContext(t)); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

// Kill only ends its own session's processes.
func TestKillSparesOtherSessions(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	victim, _, _ := startShell(t, b, name, sessions.DefaultSize)
	other, _, _ := startShell(t, b, name, sessions.DefaultSize)
	other.write(t, "sleep 1011 &\n")
	otherPID := shellPID(t, other)
	victim.write(t, "sleep 1012 &\n")
	shellPID(t, victim)

	if err := victim.p.Kill(testContext(t)); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if got := live(t, name, inSession(otherPID)); len(got) != 2 {
		t.Errorf("other session after Kill: %+v, want its shell and sleep 1011", got)
	}
	other.write(t, "echo still-$((1+1))\n")
	other.expect(t, `still-2`, 10*time.Second)
}

func TestKillWhenContainerGone(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.DefaultSize)
	shellPID(t, tm)
	dockerCLI(t, "rm", "-f", name)

	began := time.Now()
	if err := tm.p.Kill(testContext(t)); err != nil {
		t.Fatalf("Kill after docker rm -f: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Kill after docker rm -f took %v", d)
	}
	// The stream may have ended before Kill: then Read said why.
	if err := tm.waitEnd(t, 5*time.Second); !errors.Is(err, io.EOF) && !errors.Is(err, sessions.ErrInstanceGone) {
		t.Fatalf("stream ended with %v, want io.EOF or ErrInstanceGone", err)
	}
}

// A shell whose stream was simply dropped (a gateway that died) keeps
// running; a later Backend's Sweep ends it, in labelled containers only.
func TestSweepEndsOrphans(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.sweep=" + randomHex(6) // no other test's containers
	labelled, _ := runContainer(t, "--label", label)
	plain, _ := runContainer(t)
	old := newBackend(t, Config{GatewayID: "gw1"})
	other := newBackend(t, Config{GatewayID: "gw2"}) // another gateway on the engine

	orphan := func(name string) int {
		tm, _, _ := startShell(t, old, name, sessions.DefaultSize)
		tm.write(t, "sleep 1003 & setsid sleep 1004 &\n")
		pid := shellPID(t, tm)
		tm.p.(*process).Abandon()
		<-tm.done
		return pid
	}
	pidL, pidP := orphan(labelled), orphan(plain)
	tmOther, _, _ := startShell(t, other, labelled, sessions.DefaultSize)
	pidOther := shellPID(t, tmOther)
	dockerCLI(t, "exec", "-d", labelled, "sleep", "1005") // not ours
	// docker exec -d returns before its process runs: wait until it and
	// the orphans' jobs show (a fixed 500 ms was too short under load).
	termtest.Until(10*time.Second, 50*time.Millisecond, func() bool {
		return len(live(t, labelled, sleeps("1005"))) == 1 && len(live(t, labelled, sleeps("1003", "1004"))) == 2
	})
	if got := live(t, labelled, sleeps("1003", "1004")); len(got) != 2 {
		t.Fatalf("orphaned jobs before Sweep: %+v", got)
	}

	b := newBackend(t, Config{Label: label, GatewayID: "gw1"})
	if err := b.Sweep(testContext(t)); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if left := live(t, labelled, func(p proc) bool { return p.SID == pidL || sleeps("1003", "1004")(p) }); len(left) != 0 {
		t.Errorf("Sweep left orphans: %+v", left)
	}
	if got := live(t, labelled, sleeps("1005")); len(got) != 1 {
		t.Errorf("Sweep ended an unmarked process: %+v", procs(t, labelled))
	}
	if got := live(t, labelled, inSession(pidOther)); len(got) != 1 {
		t.Errorf("Sweep ended another gateway's live shell: %+v", procs(t, labelled))
	}
	// The orphan's job there must survive (its shell may already have
	// died of the hang-up when its stream closed, which is not Sweep's).
	if got := live(t, plain, func(p proc) bool { return p.SID == pidP && sleeps("1003")(p) }); len(got) != 1 {
		t.Errorf("Sweep reached into an unlabelled container: %+v", procs(t, plain))
	}
}
