package local

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestMeasureIdleMemory is a measurement, not a check: with
// TERMGATE_MEASURE_IDLE_LOCAL=N it opens N idle local sessions (sh) on the
// sessions package's default (raw) replay and prints the gateway's heap,
// goroutine stacks and goroutines per idle session. The kernel's
// pty limit (/proc/sys/kernel/pty/max, 4096 by default) bounds N here.
//
//	TERMGATE_MEASURE_IDLE_LOCAL=2000 go test -count=1 -run TestMeasureIdleMemory -v ./backend/local/
func TestMeasureIdleMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TERMGATE_MEASURE_IDLE_LOCAL"))
	if n <= 0 {
		t.Skip("a measurement: set TERMGATE_MEASURE_IDLE_LOCAL=N to run it")
	}
	reg := newRegistry(t, "/bin/sh")
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = reg.Shutdown(ctx)
	}()
	g0, m0 := settleMem()
	start := time.Now()
	openSessions(t, reg, "idle", n, 8, "true")
	opened := time.Since(start)
	g1, m1 := settleMem()
	per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) / 1024 }
	const ring = 64 // KiB, the default --buffer-size
	t.Logf("%d idle local sessions opened in %v", n, opened.Round(time.Millisecond))
	t.Logf("goroutines %d -> %d: %.2f per idle session", g0, g1, float64(g1-g0)/float64(n))
	t.Logf("per idle session: heap %.1f KiB (replay ring %d KiB), stacks %.1f KiB -> %.1f KiB beyond the ring",
		per(m0.HeapInuse, m1.HeapInuse), ring, per(m0.StackInuse, m1.StackInuse),
		per(m0.HeapInuse, m1.HeapInuse)+per(m0.StackInuse, m1.StackInuse)-ring)
}

func settleMem() (int, runtime.MemStats) {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
	}
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m
}
