package e2e

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/keys"
)

// A hostile holder in one instance (red team round 3, H3): a program
// listening at the holder's socket that answers the gateway with a replay
// of 2^62 bytes. The gateway used to allocate it up front and die, at
// every start (the adoption of held sessions) and at runtime (the
// re-adoption after a reset the holder announced), taking every session
// of every instance with it. Now that holder's answer is a protocol error
// of its instance only: the durable gateway starts, stays up and serves
// the other instances.

var (
	hostileOnce sync.Once
	hostileBin  string
	hostileErr  error
)

// hostileHolder builds testdata/hostileholder, static (it runs in busybox).
func hostileHolder(t *testing.T) string {
	t.Helper()
	hostileOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			hostileErr = err
			return
		}
		dir, err := os.MkdirTemp("", "tge2e-hostile-")
		if err != nil {
			hostileErr = err
			return
		}
		hostileBin = filepath.Join(dir, "hostileholder")
		hostileErr = buildStatic(root, hostileBin, "./e2e/testdata/hostileholder")
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileBin
}

// plantHostileHolder copies the hostile holder into the container and runs
// it on the first holder directory's socket (as root, in a 0700 directory
// of root's: the owner and mode a genuine holder's have), in mode, with the
// key g's holders have in that container (what root there can read from a
// genuine holder: see instanceKey).
func plantHostileHolder(t *testing.T, g *gateway, container, mode string) {
	t.Helper()
	bin := hostileHolder(t)
	key := instanceKey(t, g, container)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := docker(ctx, "cp", bin, container+":/hostileholder"); err != nil {
		t.Fatal(err)
	}
	dockerExec(t, container, "mkdir -p -m 700 /tmp/.termgate")
	if _, err := docker(ctx, "exec", "-d", container, "sh", "-c",
		"exec /hostileholder /tmp/.termgate/holder.sock "+mode+" "+key+" >/tmp/hostile.log 2>&1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hostile holder listens in "+container, func() bool {
		return strings.TrimSpace(dockerExec(t, container, "test -S /tmp/.termgate/holder.sock && echo yes || true")) == "yes"
	})
}

// instanceKey is the key (hex) of g's holders in container: derived from
// g's host key and the container's ID as the gateway derives it.
func instanceKey(t *testing.T, g *gateway, container string) string {
	t.Helper()
	secret, err := keys.HolderSecret(filepath.Join(g.stateDir, "ssh_host_ed25519_key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	id, err := docker(ctx, "inspect", "-f", "{{.Id}}", container)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(exechost.InstanceKey(secret, strings.TrimSpace(id)))
}

// hostileConnections is how many connections the hostile holder in the
// container has had.
func hostileConnections(t *testing.T, container string) int {
	t.Helper()
	return strings.Count(dockerExec(t, container, "cat /tmp/hostile.log 2>/dev/null || true"), "connection ")
}

func TestDurableHostileHolderCannotCrashTheGateway(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1", "web-2", "web-3"}})
	atStart, good, atRuntime := d.name("web-1"), d.name("web-2"), d.name("web-3")
	plantHostileHolder(t, d.gateway, atStart, "huge")
	plantHostileHolder(t, d.gateway, atRuntime, "reset-then-huge")

	// The start-up adoption meets both: web-1's replay is refused, web-3
	// is adopted (its first answer is well-formed).
	d.sigterm(t)
	d.restart(t) // fails the test if the gateway dies before /healthz answers
	eventually(t, "the start-up adoption reached the hostile holders", func() bool {
		return hostileConnections(t, atStart) >= 1 && hostileConnections(t, atRuntime) >= 1
	})

	// web-3's holder announces a reset a second after it was adopted, and
	// answers the re-adoption with 2^62: the attached client is told, the
	// gateway goes on. (Under load the client may attach after the reset:
	// then its own attach meets the huge replay, which must fail as well.)
	victim := d.attach(t, keyAdmin, atRuntime, 80, 24)
	_ = victim.wait()
	notice := anyNotice(victim)
	if !strings.Contains(notice, "failed") && !strings.Contains(notice, "holder") {
		t.Errorf("the client of the hostile instance got %q, want an error", notice)
	}
	t.Logf("the client of %s was told %q", atRuntime, strings.TrimSpace(notice))

	// The attach to web-1 fails: its holder's answer is refused again.
	s := d.attach(t, keyAdmin, atStart, 80, 24)
	_ = s.wait()
	if !strings.Contains(anyNotice(s), "failed") {
		t.Errorf("attach to the hostile instance: %q, want that it failed", anyNotice(s))
	}

	// The gateway is up and serves the other instance, durably.
	time.Sleep(time.Second) // room for a crash the refusal might cause
	if !d.proc.Running() {
		t.Fatalf("the gateway exited (the fixture's stop says how)\n%s", d.logs)
	}
	g := d.attach(t, keyAdmin, good, 80, 24)
	g.send("echo ok-$((40+2))")
	g.expect(`ok-42`)
	expectDurable(t, d.gateway, good, "", true)
	logs := d.logs.String()
	if !strings.Contains(logs, "holder protocol violation") {
		t.Errorf("the gateway log does not name the protocol violation:\n%s", logs)
	}
	if strings.Contains(logs, "panic") {
		t.Errorf("the gateway log has a panic:\n%s", logs)
	}
	g.close()
}

// A holder that announces a reset 50 ms into every connection (red team
// round 3, M3: 10 adopt/exec cycles a second, with or without clients) is
// followed no faster than a client may reset (5, then one every 2 s): its
// client is disconnected after 5, and with no client attached nothing
// connects to it any more.
func TestDurableHolderResetLoopIsBounded(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	name := d.name("web-1")
	plantHostileHolder(t, d.gateway, name, "reset-loop")

	start := time.Now()
	s := d.attach(t, keyAdmin, name, 80, 24)
	_ = s.wait()
	if !strings.Contains(anyNotice(s), "keeps resetting") {
		t.Errorf("the client of the resetting holder was told %q, want that it keeps resetting", anyNotice(s))
	}
	// The attach's connection, a burst of 5 followed resets, and one more
	// for every 2 s the burst took.
	n, bound := hostileConnections(t, name), 1+5+int(time.Since(start)/(2*time.Second))
	if n > bound {
		t.Errorf("%d connections to the resetting holder in %s, want at most %d", n, time.Since(start).Round(time.Millisecond), bound)
	}
	time.Sleep(5 * time.Second)
	if later := hostileConnections(t, name); later != n {
		t.Errorf("%d more connections to the resetting holder in 5 s with no client attached, want none", later-n)
	}
	t.Logf("%d connections to the resetting holder", n)
}

// A holder socket that accepts and never answers (red team round 4, L4)
// held a durable gateway's start for 15 s per instance: the listeners
// opened only after its adoption timed out. Adoption now runs in the
// background, instance by instance: the restarted gateway serves the
// other instances while that adoption still waits.
func TestDurableSilentHolderDelaysNothingElse(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-silent", "web-good"}})
	silent, good := d.name("web-silent"), d.name("web-good")
	plantHostileHolder(t, d.gateway, silent, "silent")
	d.sigterm(t)
	d.restart(t)
	eventually(t, "the start-up adoption reached the silent holder", func() bool {
		return hostileConnections(t, silent) >= 1
	})
	g := d.attach(t, keyAdmin, good, 80, 24)
	g.send("echo ok-$((40+2))")
	g.expect(`ok-42`)
	if logs := d.logs.String(); strings.Contains(logs, "could not adopt") || strings.Contains(logs, "adopting the held session failed") {
		t.Errorf("the other instance was served only once the silent holder's adoption had given up:\n%s", logs)
	}
	g.close()
}
