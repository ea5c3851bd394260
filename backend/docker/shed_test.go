package docker

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// Jobs that shed or forge their marker (red team L1, issue 18 item 9) and
// jobs of a holder that died (stress D1, issue 20 item 1), in real
// containers, checked with ps there.

// shedJobs starts, in the shell, the red team's four jobs: one that forges
// TERMGATE_HELD=1, one that leaves the session and clears its environment
// (setsid forks here: a job of an interactive shell leads its process
// group, so that one is PID 1's child at once), one that clears its
// environment only, one that leaves the session only.
const shedJobs = "env TERMGATE_HELD=1 setsid sleep 7777 & setsid env -i sleep 8888 & env -i sleep 9999 & setsid sleep 6666 & echo sta''rted\n"

var shedSleeps = []string{"7777", "8888", "9999", "6666"}

// psLine is one line of `ps -o pid,ppid,stat,args`.
type psLine struct {
	PID, PPID int
	Stat      string
	Args      string
}

func psTree(t *testing.T, container string) []psLine {
	t.Helper()
	var ps []psLine
	for line := range strings.Lines(dockerCLI(t, "exec", container, "ps", "-o", "pid,ppid,stat,args")) {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		ppid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			continue
		}
		ps = append(ps, psLine{PID: pid, PPID: ppid, Stat: f[2], Args: strings.Join(f[3:], " ")})
	}
	return ps
}

// holderPID is the PID of the container's holder daemon (the serve
// process without --attach: that one is the start exec's).
func holderPID(t *testing.T, container string) int {
	t.Helper()
	for _, p := range psTree(t, container) {
		if strings.Contains(p.Args, "holder-") && strings.Contains(p.Args, " serve ") && !strings.Contains(p.Args, "--attach") && !strings.HasPrefix(p.Stat, "Z") {
			return p.PID
		}
	}
	t.Fatalf("no holder daemon in %s:\n%v", container, psTree(t, container))
	return 0
}

func waitLive(t *testing.T, name string, n int, keep func(proc) bool) {
	t.Helper()
	waitFor(t, strconv.Itoa(n)+" jobs running", func() bool { return len(live(t, name, keep)) == n })
}

// TestKillEndsJobsThatShedTheirMarker: an ordinary session's reset (Kill)
// ends the red team's four jobs, not only the two that kept an honest
// marker.
func TestKillEndsJobsThatShedTheirMarker(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.DefaultSize)
	tm.write(t, shedJobs)
	tm.expect(t, "started", 10*time.Second)
	waitLive(t, name, 4, sleeps(shedSleeps...))
	if err := tm.p.Kill(testContext(t)); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if left := live(t, name, sleeps(shedSleeps...)); len(left) != 0 {
		t.Fatalf("left after the reset: %+v", left)
	}
	if left := live(t, name, func(p proc) bool { return p.PID == 1 || strings.Contains(p.Args, "sleep 1000000") }); len(left) != 2 {
		t.Errorf("the kill touched the container's own processes: %+v", procs(t, name))
	}
}

// TestHeldResetEndsJobsThatShedTheirMarker: in a held session the same
// jobs, and one that double-forks, calls setsid and clears its
// environment, are below the holder (a subreaper): its reset ends them
// all, and it reaps what it inherited.
func TestHeldResetEndsJobsThatShedTheirMarker(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b, _ := durableBackend(t, Config{})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	all := append([]string{"5555"}, shedSleeps...)
	tm.write(t, "(setsid env -i sleep 5555 &); "+shedJobs)
	tm.expect(t, "started", 10*time.Second)
	waitLive(t, name, 5, sleeps(all...))
	holder := holderPID(t, name)
	for _, p := range psTree(t, name) {
		if strings.Contains(p.Args, "sleep 5555") && p.PPID != holder {
			t.Fatalf("the double-forked job's parent is %d, want the holder %d", p.PPID, holder)
		}
	}
	if err := h.Reset(testContext(t), randomHex(8)); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if left := live(t, name, sleeps(all...)); len(left) != 0 {
		t.Fatalf("left after the reset: %+v", left)
	}
	waitFor(t, "the holder to reap its orphans", func() bool {
		for _, p := range psTree(t, name) {
			if p.PPID == holder && strings.HasPrefix(p.Stat, "Z") {
				return false
			}
		}
		return true
	})
	if got := holderPID(t, name); got != holder {
		t.Fatalf("the holder is %d after the reset, want %d", got, holder)
	}
	_ = h.Release()
	if err := tm.waitEnd(t, 10*time.Second); !errors.As(err, new(*sessions.ResetError)) {
		t.Fatalf("the stream ended with %v, want the reset", err)
	}
}

// heldJobs starts two jobs that outlive their shell: one that ignores
// SIGHUP (what nohup does: the test image has no nohup) and a setsid one.
const heldJobs = "(trap '' HUP; exec sleep 9191) >/dev/null 2>&1 & setsid sleep 9292 & echo jo''bs\n"

var heldSleeps = []string{"9191", "9292"}

// TestHeldHolderKilledEndsItsJobs: a holder killed with kill -9 takes its
// shell with it; the gateway tells the client so (not "the shell keeps
// running"), ends the jobs the shell left, and the next session starts
// clean.
func TestHeldHolderKilledEndsItsJobs(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b, logs := durableBackend(t, Config{})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	tm.write(t, heldJobs)
	tm.expect(t, "jobs", 10*time.Second)
	waitLive(t, name, 2, sleeps(heldSleeps...))
	dockerCLI(t, "exec", name, "kill", "-9", strconv.Itoa(holderPID(t, name)))
	err := tm.waitEnd(t, 30*time.Second)
	if !errors.Is(err, sessions.ErrHolderDied) {
		t.Fatalf("the session ended with %v, want ErrHolderDied (%q)\nlog:\n%s", err, sessions.ErrHolderDied, logs)
	}
	_ = h.Release()
	if left := live(t, name, sleeps(heldSleeps...)); len(left) != 0 {
		t.Fatalf("the dead holder's jobs still run: %+v\nlog:\n%s", left, logs)
	}
	tm2, h2 := startHeld(t, b, inst)
	if h2.Held().Session == h.Held().Session {
		t.Fatalf("the new session is the dead holder's %s", h.Held().Session)
	}
	tm2.write(t, "jobs; echo do''ne\n")
	tm2.expect(t, "done", 10*time.Second)
	if strings.Contains(tm2.output(), "sleep") {
		t.Fatalf("the new shell has old jobs: %q", tm2.output())
	}
	release(t, tm2, h2)
}

// TestSweepEndsJobsOfAHolderThatDied: a holder killed while no gateway
// runs leaves jobs marked as held; the next gateway's start-up sweep ends
// them (no live holder is above them) and spares a live holder's.
func TestSweepEndsJobsOfAHolderThatDied(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.died=" + randomHex(6) // the sweep reaches this test's containers only
	dead, _ := runContainer(t, "--label", label)
	alive, _ := runContainer(t, "--label", label)
	b1, _ := durableBackend(t, Config{Label: label})
	for _, name := range []string{dead, alive} {
		tm, h := startHeld(t, b1, lookup(t, b1, name))
		tm.write(t, heldJobs)
		tm.expect(t, "jobs", 10*time.Second)
		waitLive(t, name, 2, sleeps(heldSleeps...))
		release(t, tm, h)
	}
	// No gateway runs now.
	dockerCLI(t, "exec", dead, "kill", "-9", strconv.Itoa(holderPID(t, dead)))
	b2, _ := durableBackend(t, Config{Label: label, GatewayID: "tgnext" + randomHex(3)})
	if err := b2.Sweep(testContext(t)); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if left := live(t, dead, sleeps(heldSleeps...)); len(left) != 0 {
		t.Fatalf("the dead holder's jobs survived the start-up sweep: %+v", left)
	}
	if got := live(t, alive, sleeps(heldSleeps...)); len(got) != 2 {
		t.Fatalf("the sweep ended a live holder's jobs: %+v left of 2", got)
	}
}

// TestAdoptAfterTheHolderDiedEndsItsJobs: a holder that dies while this
// gateway holds no connection to it (the session was left to it) leaves a
// stale socket; the next attach's Adopt finds it and ends the dead
// holder's jobs before a new session starts there.
func TestAdoptAfterTheHolderDiedEndsItsJobs(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b, _ := durableBackend(t, Config{})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	tm.write(t, heldJobs)
	tm.expect(t, "jobs", 10*time.Second)
	waitLive(t, name, 2, sleeps(heldSleeps...))
	release(t, tm, h)
	dockerCLI(t, "exec", name, "kill", "-9", strconv.Itoa(holderPID(t, name)))
	if _, err := b.Adopt(testContext(t), inst, ""); !errors.Is(err, sessions.ErrNotHeld) {
		t.Fatalf("Adopt after the holder died = %v, want ErrNotHeld", err)
	}
	if left := live(t, name, sleeps(heldSleeps...)); len(left) != 0 {
		t.Fatalf("the dead holder's jobs still run when a new session may start: %+v", left)
	}
}
