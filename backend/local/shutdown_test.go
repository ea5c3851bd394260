package local

import (
	"context"
	"testing"
	"time"
)

// TestShutdownLeavesNoProcess is issue 10 item 1: ending many local
// sessions at once (what SIGTERM does) must leave no process of any of
// them, within the contract's 10 s. Before, each session's Kill walked all
// of /proc on its own, and the walks of all sessions together did not
// finish in time: processes were left behind.
func TestShutdownLeavesNoProcess(t *testing.T) {
	reg := newRegistry(t, "/bin/sh")
	// Background jobs in every session: several each, so that /proc holds
	// what a busy host holds.
	const n = 200
	pids := openSessions(t, reg, "s", n, 8, "sleep 1000 & sleep 1000 & sleep 1000 & sleep 1000")
	if live := liveInSessions(t, pids); len(live) < 5*n {
		t.Fatalf("%d processes in the %d sessions before the shutdown, want %d", len(live), n, 5*n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the contract's bound for SIGTERM
	defer cancel()
	start := time.Now()
	err := reg.Shutdown(ctx)
	t.Logf("shutdown of %d sessions took %v", n, time.Since(start).Round(time.Millisecond))
	left := liveInSessions(t, pids)
	if err != nil {
		_ = reg.Shutdown(context.Background()) // let the rest end before goleak looks
	}
	if len(left) > 0 {
		t.Errorf("shutdown of %d sessions (%v) left %d of their processes running, e.g. %q", n, err, len(left), left[:min(len(left), 5)])
	}
}
