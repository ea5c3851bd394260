package sessions

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestMeasureIdleSessions is a measurement, not a check: with
// TERMGATE_MEASURE_IDLE=N it starts N sessions on an in-memory backend
// (each shell a pipe), attaches and detaches a client to each so they are
// idle, and prints the gateway-side memory and goroutines per idle session
// beyond its replay buffer (the ring, BufferSize bytes). It measures the
// sessions package alone: the screen replayer (cmd/termgate's default)
// and a backend's own goroutines come on top (docs/PERFORMANCE.md).
//
//	TERMGATE_MEASURE_IDLE=10000 go test -count=1 -run TestMeasureIdleSessions -v ./sessions/
func TestMeasureIdleSessions(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TERMGATE_MEASURE_IDLE"))
	if n <= 0 {
		t.Skip("a measurement: set TERMGATE_MEASURE_IDLE=N to run it")
	}
	const buffer = 64 << 10
	r, _ := newTestRegistry(t, Config{BufferSize: buffer, IdleTimeout: time.Hour})
	g0, m0 := settle()
	start := time.Now()
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := r.Attach(ctx, fmt.Sprintf("idle%d", i), AttachOptions{Size: Size{Cols: 80, Rows: 24}})
		cancel()
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		c.Detach()
	}
	opened := time.Since(start)
	g1, m1 := settle()
	perSession := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) }
	heap := perSession(m0.HeapInuse, m1.HeapInuse)
	stack := perSession(m0.StackInuse, m1.StackInuse)
	t.Logf("%d idle sessions opened in %v", n, opened.Round(time.Millisecond))
	t.Logf("goroutines: %d -> %d (%.2f per idle session)", g0, g1, float64(g1-g0)/float64(n))
	t.Logf("heap in use per idle session: %.1f KiB (replay buffer %d KiB) -> %.1f KiB beyond it",
		heap/1024, buffer>>10, (heap-buffer)/1024)
	t.Logf("goroutine stacks per idle session: %.1f KiB; total beyond the replay buffer: %.1f KiB",
		stack/1024, (heap-buffer+stack)/1024)
}

// settle collects garbage until the heap is steady and returns the
// goroutine count and memory statistics.
func settle() (int, runtime.MemStats) {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m
}
