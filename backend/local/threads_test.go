package local

import (
	"context"
	"testing"
	"time"
)

// TestThreadsDoNotGrowWithSessions is issue 10 item 5: an idle session must
// cost goroutines parked on the runtime's poller, not an OS thread each
// (before: 1,000 sessions, 1,008 threads).
func TestThreadsDoNotGrowWithSessions(t *testing.T) {
	reg := newRegistry(t, "/bin/sh")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := reg.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	// Starting shells in parallel makes the runtime create threads it then
	// keeps; start a few first so that those are counted before.
	const par = 8
	openSessions(t, reg, "warm", 2*par, par, "sleep 1000")
	before := threads(t)
	const n = 100
	openSessions(t, reg, "s", n, par, "sleep 1000")
	if after := threads(t); after-before >= 20 {
		t.Errorf("%d more idle sessions (each resized once) took the gateway from %d to %d OS threads; want fewer than 20 more", n, before, after)
	} else {
		t.Logf("%d more idle sessions: OS threads %d -> %d", n, before, after)
	}
}
