package docker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/sessions"
)

// Two deployments on one engine (issue 18 item 5; CONTRACT.md, durable
// item 7): gateways with different host keys, so different holder secrets,
// serving the same container. The second neither adopts, lists, resets nor
// ends the first's session; its own sessions get a holder of their own in
// another directory; the first still adopts its own.
func TestHeldDeploymentsStayApart(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.deploy=" + randomHex(6) // HeldSessions sees this test's container only
	name, _ := runContainer(t, "--label", label)
	a, _ := durableBackend(t, Config{Label: label, GatewayID: "tgdeploya", Durable: exechost.Durable{HolderSecret: []byte("deployment A's secret, 32 bytes!")}})
	b, bLogs := durableBackend(t, Config{Label: label, GatewayID: "tgdeployb", Durable: exechost.Durable{HolderSecret: []byte("deployment B's secret, 32 bytes!")}})
	inst := lookup(t, a, name)

	tmA, hA := startHeld(t, a, inst)
	pidA, sessionA, dirA := shellPID(t, tmA), hA.Held().Session, hA.(interface{ Dir() string }).Dir()
	tmA.write(t, "sleep 4747 & echo jo''b\n")
	tmA.expect(t, `job`, 10*time.Second)
	release(t, tmA, hA)
	aAlive := func(when string) {
		t.Helper()
		if len(live(t, name, func(p proc) bool { return p.PID == pidA })) != 1 ||
			len(live(t, name, func(p proc) bool { return p.Args == "sleep 4747" })) != 1 {
			t.Fatalf("%s: A's shell %d or its job is gone:\n%v", when, pidA, procs(t, name))
		}
	}

	// B does not adopt A's holder: the error says there is nothing of
	// B's, and why (the registry then counts nothing and starts B's own).
	if p, err := b.Adopt(testContext(t), inst, ""); !errors.Is(err, sessions.ErrNotHeld) || !errors.Is(err, exechost.ErrForeign) {
		if p != nil {
			_ = p.Release()
		}
		t.Fatalf("B's Adopt = %v, %v; want ErrNotHeld and ErrForeign", p, err)
	}
	if _, err := b.Adopt(testContext(t), inst, ""); !errors.Is(err, exechost.ErrForeign) {
		t.Fatalf("B's second Adopt = %v, want ErrForeign", err)
	}
	if n := strings.Count(bLogs.String(), "holder started by another deployment; leaving it alone"); n != 1 {
		t.Errorf("B's log says so %d times, want once:\n%s", n, bLogs.String())
	}
	if held, err := b.HeldSessions(testContext(t)); err != nil || len(held) != 0 {
		t.Fatalf("B's HeldSessions = %v, %v; want none (only A holds a session there)", held, err)
	}

	// B's own session: another holder, another directory, another shell.
	tmB, hB := startHeld(t, b, inst)
	pidB, dirB := shellPID(t, tmB), hB.(interface{ Dir() string }).Dir()
	if dirB == dirA || pidB == pidA || hB.Held().Session == sessionA {
		t.Fatalf("B's session is held in %s by shell %d as %s; A's in %s by %d as %s: want them apart",
			dirB, pidB, hB.Held().Session, dirA, pidA, sessionA)
	}
	// B's reset and end reach B's session only.
	fresh := randomHex(8)
	if err := hB.Reset(testContext(t), fresh); err != nil {
		t.Fatalf("B's Reset: %v", err)
	}
	tmB.waitEnd(t, 10*time.Second)
	_ = hB.Release()
	aAlive("after B's reset")
	tmB2, hB2 := adopt(t, b, inst)
	if hB2.Held().Session != fresh {
		t.Fatalf("B adopts %q, want its own fresh session %q", hB2.Held().Session, fresh)
	}
	if err := hB2.Kill(testContext(t)); err != nil {
		t.Fatalf("B's Kill: %v", err)
	}
	tmB2.waitEnd(t, 10*time.Second)
	if err := b.Sweep(testContext(t)); err != nil {
		t.Fatalf("B's Sweep: %v", err)
	}
	aAlive("after B ended its own session and swept")

	// A (a restart: a new Backend with A's secret) still adopts its own.
	a2, _ := durableBackend(t, Config{Label: label, GatewayID: "tgdeploya", Durable: exechost.Durable{HolderSecret: []byte("deployment A's secret, 32 bytes!")}})
	held, err := a2.HeldSessions(testContext(t))
	if err != nil || len(held) != 1 || held[0].Instance.Name != name {
		t.Fatalf("A's HeldSessions = %v, %v; want %s", held, err, name)
	}
	tmA2, hA2 := adopt(t, a2, inst)
	if got := shellPID(t, tmA2); got != pidA || hA2.Held().Session != sessionA {
		t.Fatalf("A adopts shell %d session %s, want its own %d %s", got, hA2.Held().Session, pidA, sessionA)
	}
	if !strings.Contains(string(hA2.Held().Replay), "job") {
		t.Fatalf("A's replay %q lost what its shell printed", hA2.Held().Replay)
	}
}
