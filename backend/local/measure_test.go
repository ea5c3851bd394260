package local

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestMeasureManySessions is a measurement, not a check: with
// TERMGATE_MEASURE_SESSIONS=N it opens N local sessions (bash, as the
// gateway's automatic shell), each with `sleep 1000 &`, prints the OS
// threads before and after, then shuts the registry down with the
// contract's 10 s and prints how long it took and what was left:
//
//	TERMGATE_MEASURE_SESSIONS=1000 go test -count=1 -run TestMeasureManySessions -v ./backend/local/
func TestMeasureManySessions(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TERMGATE_MEASURE_SESSIONS"))
	if n <= 0 {
		t.Skip("a measurement: set TERMGATE_MEASURE_SESSIONS=N to run it")
	}
	shell := []string(nil)
	if s := os.Getenv("TERMGATE_MEASURE_SHELL"); s != "" {
		shell = []string{s}
	}
	reg := newRegistry(t, shell...)
	before := threads(t)
	start := time.Now()
	pids := openSessions(t, reg, "s", n, 8, "sleep 1000")
	time.Sleep(2 * time.Second) // let the sessions settle into idle
	t.Logf("sessions=%d opened in %v; OS threads %d -> %d (goroutines %d)", n, time.Since(start).Round(time.Millisecond), before, threads(t), runtime.NumGoroutine())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start = time.Now()
	err := reg.Shutdown(ctx)
	took := time.Since(start)
	left := liveInSessions(t, pids)
	t.Logf("shutdown of %d sessions: %v (err %v); processes of those sessions left: %d", n, took.Round(time.Millisecond), err, len(left))
	if err != nil { // finish, so that nothing outlives the measurement
		_ = reg.Shutdown(context.Background())
		t.Logf("after waiting for the rest: %d left", len(liveInSessions(t, pids)))
	}
}
