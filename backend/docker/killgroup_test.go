package docker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/termgate/termgate/sessions"
)

// execCounter passes every call to the real engine and records the kill
// execs created; gate, when set, holds the first one back until closed.
type execCounter struct {
	client.APIClient
	mu    sync.Mutex
	kills [][]string // each kill exec's markers
	gate  chan struct{}
}

func (c *execCounter) ContainerExecCreate(ctx context.Context, id string, opts container.ExecOptions) (container.ExecCreateResponse, error) {
	if len(opts.Cmd) >= 4 && opts.Cmd[3] == "termgate-kill" {
		c.mu.Lock()
		var markers []string // the modes, not the holder directories every kill is told
		for _, a := range opts.Cmd[4:] {
			if !strings.HasPrefix(a, "--holder-dir=") {
				markers = append(markers, a)
			}
		}
		c.kills = append(c.kills, markers)
		first := len(c.kills) == 1
		c.mu.Unlock()
		if first && c.gate != nil {
			<-c.gate
		}
	}
	return c.APIClient.ContainerExecCreate(ctx, id, opts)
}

func (c *execCounter) killExecs() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]string(nil), c.kills...)
}

func newCountingBackend(t *testing.T, gate chan struct{}) (*Backend, *execCounter) {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	c := &execCounter{APIClient: cli, gate: gate}
	return newBackend(t, Config{Client: c}), c
}

// startShells starts n shells in the container, each with a background job.
func startShells(t *testing.T, b *Backend, name string, n int) []*term {
	t.Helper()
	tms := make([]*term, n)
	for i := range tms {
		tms[i], _, _ = startShell(t, b, name, sessions.DefaultSize)
		tms[i].write(t, fmt.Sprintf("sleep %d &\n", 2000+i))
		shellPID(t, tms[i])
	}
	return tms
}

// killAll kills every shell at once, as a SIGTERM of the gateway does.
func killAll(t *testing.T, tms []*term) {
	t.Helper()
	ctx := testContext(t)
	errs := make(chan error, len(tms))
	for _, tm := range tms {
		go func() { errs <- tm.p.Kill(ctx) }()
	}
	for range tms {
		if err := <-errs; err != nil {
			t.Errorf("Kill: %v", err)
		}
	}
}

// Concurrent Kill calls for sessions of one container share kill execs: the
// ones that arrive while an exec runs are ended together by the next one
// (issue 10 item 1).
func TestKillsInOneContainerShareExecs(t *testing.T) {
	needEngine(t)
	t.Parallel()
	const n = 6
	name, id := runContainer(t)
	gate := make(chan struct{})
	b, counter := newCountingBackend(t, gate)
	tms := startShells(t, b, name, n)

	first := make(chan error, 1)
	go func() { first <- tms[0].p.Kill(testContext(t)) }()
	waitFor(t, "the first kill exec", func() bool { return len(counter.killExecs()) == 1 })
	rest := make(chan struct{})
	go func() {
		defer close(rest)
		killAll(t, tms[1:])
	}()
	waitFor(t, "the other Kill calls to join one batch", func() bool {
		waiting, _ := b.KillsWaiting(sessions.Instance{Name: name, ID: id})
		return waiting == n-1
	})
	close(gate)
	if err := <-first; err != nil {
		t.Errorf("first Kill: %v", err)
	}
	<-rest

	execs := counter.killExecs()
	if len(execs) != 2 || len(execs[1]) != n-1 {
		t.Errorf("kill execs %q, want 2: the first session's, then the %d others' together", execs, n-1)
	}
	if left := live(t, name, func(p proc) bool { return strings.Contains(p.Args, "sleep 20") || strings.HasPrefix(p.Args, "sh -l") }); len(left) != 0 {
		t.Errorf("left after the Kill calls: %+v", left)
	}
	if b.KillsBusy() {
		t.Errorf("kill lanes left after every Kill returned")
	}
}

// Measures (never asserts) the kill execs and the time it takes to end 12
// sessions of one container at once.
func TestKillManySessionsAtOnce(t *testing.T) {
	needEngine(t)
	t.Parallel()
	const n = 12
	name, _ := runContainer(t)
	b, counter := newCountingBackend(t, nil)
	tms := startShells(t, b, name, n)
	began := time.Now()
	killAll(t, tms)
	t.Logf("%d sessions of one container ended in %v with %d kill execs", n, time.Since(began), len(counter.killExecs()))
	if left := live(t, name, func(p proc) bool { return strings.Contains(p.Args, "sleep 20") || strings.HasPrefix(p.Args, "sh -l") }); len(left) != 0 {
		t.Errorf("left after the Kill calls: %+v", left)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 20 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
