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
	g := &Grouper{Run: func(ctx context.Context, key string, markers []string) ([]Ended, error) {
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
		if l := g.lanes["pod"]; l != nil && len(l.pending) > 0 {
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
