package procmark

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseEnded(t *testing.T) {
	out := "killed 12 gw.s1 bash\nkilled 13 - sleep\nnoise\nkilled 12 gw.s1 bash\nkilled x gw.s1 y\nkilled 14 gw.s2 a b) c\n"
	got := ParseEnded(out)
	want := []Ended{{12, "gw.s1", "bash"}, {13, "", "sleep"}, {14, "gw.s2", "a b) c"}}
	if !slices.Equal(got, want) {
		t.Errorf("ParseEnded = %+v, want %+v", got, want)
	}
}

// TestGrouperSharesExecs: kills for one instance that arrive while one
// runs share the next exec; each caller gets only its own processes.
func TestGrouperSharesExecs(t *testing.T) {
	var (
		mu    sync.Mutex
		runs  [][]string
		first = make(chan struct{})
		gate  = make(chan struct{})
	)
	g := &Grouper[string]{Run: func(ctx context.Context, key string, markers []string) ([]Ended, error) {
		mu.Lock()
		runs = append(runs, slices.Clone(markers))
		n := len(runs)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-gate // hold the lane while the others gather
		}
		var out []Ended
		for i, m := range markers {
			out = append(out, Ended{PID: 100*n + i, Session: m})
		}
		return out, nil
	}}
	var wg sync.WaitGroup
	got := make([][]Ended, 6)
	wg.Go(func() { got[0], _ = g.Kill(context.Background(), "pod", "m0") })
	<-first
	for i := 1; i < 6; i++ {
		wg.Go(func() { got[i], _ = g.Kill(context.Background(), "pod", fmt.Sprintf("m%d", i)) })
	}
	// Let the five gather behind the first run, then release it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		n := 0
		if l := g.lanes[laneKey[string]{key: "pod"}]; l != nil && len(l.pending) > 0 {
			n = len(l.pending[len(l.pending)-1].markers)
		}
		g.mu.Unlock()
		if n == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d kills gathered", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(gate)
	wg.Wait()
	if len(runs) != 2 {
		t.Fatalf("%d execs for 6 kills (%v), want 2", len(runs), runs)
	}
	for i, procs := range got {
		if len(procs) != 1 || procs[0].Session != fmt.Sprintf("m%d", i) {
			t.Errorf("kill %d got %+v, want only its own process", i, procs)
		}
	}
	if len(g.lanes) != 0 {
		t.Errorf("%d lanes left after every kill returned", len(g.lanes))
	}
}

// TestGrouperKillLaterGathers: sweeps that arrive within the gathering
// time share one exec, run no sooner than that time after the first, and
// an urgent Kill meanwhile runs at once in its own exec.
func TestGrouperKillLaterGathers(t *testing.T) {
	const gather = 300 * time.Millisecond
	var (
		mu   sync.Mutex
		runs [][]string
		keys []string
	)
	g := &Grouper[string]{Run: func(ctx context.Context, key string, markers []string) ([]Ended, error) {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, slices.Clone(markers))
		keys = append(keys, key)
		var out []Ended
		for i, m := range markers {
			out = append(out, Ended{PID: i + 1, Session: m})
		}
		return out, nil
	}}
	start := time.Now()
	var wg sync.WaitGroup
	got := make([][]Ended, 4)
	for i := range 4 {
		wg.Go(func() { got[i], _ = g.KillLater(context.Background(), "pod", fmt.Sprintf("m%d", i), gather) })
		time.Sleep(20 * time.Millisecond)
	}
	if procs, err := g.Kill(context.Background(), "pod", "urgent"); err != nil || len(procs) != 1 {
		t.Fatalf("urgent Kill = %+v, %v", procs, err)
	}
	if d := time.Since(start); d >= gather {
		t.Errorf("the urgent kill returned after %v: it waited for the gathering sweeps", d)
	}
	wg.Wait()
	if d := time.Since(start); d < gather {
		t.Errorf("the sweeps ran after %v, before their gathering time %v", d, gather)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2 || !slices.Equal(runs[0], []string{"urgent"}) || len(runs[1]) != 4 {
		t.Fatalf("execs %v, want [urgent] then the four sweeps in one", runs)
	}
	if keys[0] != "pod" || keys[1] != "pod" {
		t.Errorf("Run got keys %q, want the instance's own", keys)
	}
	for i, procs := range got {
		if len(procs) != 1 || procs[0].Session != fmt.Sprintf("m%d", i) {
			t.Errorf("sweep %d got %+v, want only its own process", i, procs)
		}
	}
}
