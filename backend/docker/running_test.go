package docker

import (
	"context"
	"errors"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/termgate/termgate/sessions"
)

// inspectCounter counts the container inspects a Backend makes.
type inspectCounter struct {
	client.APIClient
	inspects atomic.Int64
}

func (c *inspectCounter) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	c.inspects.Add(1)
	return c.APIClient.ContainerInspect(ctx, id)
}

func newInspectCountingBackend(t *testing.T, label string) (*Backend, *inspectCounter) {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	cc := &inspectCounter{APIClient: cli}
	return newBackend(t, Config{Client: cc, Label: label}), cc
}

// waitWatching waits until b's event stream is open.
func waitWatching(t *testing.T, b *Backend) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := b.running.begin(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Watch did not connect within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lookupOK(t *testing.T, b *Backend, name, id string) {
	t.Helper()
	inst, err := b.Lookup(testContext(t), name)
	if err != nil || inst != (sessions.Instance{Name: name, ID: id}) {
		t.Fatalf("Lookup(%s) = %+v, %v; want %s", name, inst, err, id)
	}
}

func lookupNotFound(t *testing.T, b *Backend, name string) {
	t.Helper()
	if inst, err := b.Lookup(testContext(t), name); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("Lookup(%s) = %+v, %v; want ErrNotFound", name, inst, err)
	}
}

func expectInspects(t *testing.T, cc *inspectCounter, want int64) {
	t.Helper()
	if got := cc.inspects.Load(); got != want {
		t.Fatalf("%d container inspects so far, want %d", got, want)
	}
}

// While Watch runs, a running instance is inspected once: a reattach to
// its live session asks the engine nothing. A stop, a pause or a rename is
// heard from the engine's events, and the next lookup asks the engine
// again, which refuses a stopped instance (a paused one as paused) and the old name of a
// renamed one.
func TestLookupOfARunningInstanceAsksTheEngineOnce(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.running=" + randomHex(6)
	stopped, stoppedID := runContainer(t, "--label", label)
	paused, pausedID := runContainer(t, "--label", label)
	renamed, renamedID := runContainer(t, "--label", label)
	b, cc := newInspectCountingBackend(t, label)
	ctx, cancel := context.WithCancel(context.Background())
	evs := make(chan sessions.InstanceEvent, 16)
	done := make(chan error, 1)
	go func() { done <- b.Watch(ctx, func(ev sessions.InstanceEvent) { evs <- ev }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v after cancel", err)
		}
	}()
	waitWatching(t, b)
	event := func(id string) {
		t.Helper()
		select {
		case ev := <-evs:
			if ev.Instance.ID != id {
				t.Fatalf("event %+v, want one about %s", ev, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event about %s within 10 s", id)
		}
	}

	for range 3 {
		lookupOK(t, b, stopped, stoppedID)
		lookupOK(t, b, paused, pausedID)
		lookupOK(t, b, renamed, renamedID)
	}
	expectInspects(t, cc, 3)

	dockerCLI(t, "stop", "-t", "1", stopped)
	event(stoppedID)
	lookupNotFound(t, b, stopped)
	expectInspects(t, cc, 4)

	dockerCLI(t, "pause", paused)
	event(pausedID)
	if _, err := b.Lookup(testContext(t), paused); !errors.Is(err, sessions.ErrPaused) {
		t.Fatalf("Lookup(%s) while paused: %v, want ErrPaused", paused, err)
	}
	dockerCLI(t, "unpause", paused)
	event(pausedID)
	lookupOK(t, b, paused, pausedID)
	lookupOK(t, b, paused, pausedID)
	expectInspects(t, cc, 6)

	newName := renamed + "-new"
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", newName).Run() })
	dockerCLI(t, "rename", renamed, newName)
	event(renamedID)
	lookupNotFound(t, b, renamed)
	lookupOK(t, b, newName, renamedID)
	lookupOK(t, b, newName, renamedID)
	expectInspects(t, cc, 8)
}

// Without Watch nothing tells the Backend that an instance stopped: every
// lookup asks the engine.
func TestLookupWithoutWatchAsksTheEngineEveryTime(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.running=" + randomHex(6)
	name, id := runContainer(t, "--label", label)
	b, cc := newInspectCountingBackend(t, label)
	lookupOK(t, b, name, id)
	lookupOK(t, b, name, id)
	expectInspects(t, cc, 2)
	dockerCLI(t, "stop", "-t", "1", name)
	lookupNotFound(t, b, name)
}

// An inspect that an event overtook, or that ran while the event stream
// was down, is not remembered; a drop forgets everything.
func TestRunningRemembersOnlyWhatNoEventOvertook(t *testing.T) {
	var r running
	a := sessions.Instance{Name: "a", ID: "ida"}
	gen, watching := r.begin()
	r.put(gen, a)
	if _, ok := r.get("a"); ok || watching {
		t.Fatal("remembered an instance while no event stream was open")
	}

	r.connected()
	gen, _ = r.begin()
	r.forget("other") // any event during the inspect
	r.put(gen, a)
	if _, ok := r.get("a"); ok {
		t.Fatal("remembered an inspect that an event overtook")
	}

	gen, _ = r.begin()
	r.put(gen, a)
	if got, ok := r.get("a"); !ok || got != a {
		t.Fatalf("get(a) = %+v, %v; want %+v", got, ok, a)
	}
	r.dropped()
	r.connected()
	if _, ok := r.get("a"); ok {
		t.Fatal("an entry survived a dropped event stream")
	}

	gen, _ = r.begin()
	r.put(gen, a)
	r.forget("ida")
	if _, ok := r.get("a"); ok {
		t.Fatal("an entry survived an event about its container")
	}

	// The same container under a new name (found after a rename whose
	// event was forgotten): only the new name stays.
	gen, _ = r.begin()
	r.put(gen, a)
	gen, _ = r.begin()
	r.put(gen, sessions.Instance{Name: "b", ID: "ida"})
	if _, ok := r.get("a"); ok {
		t.Fatal("the old name of a container still resolves")
	}
	r.dropped()
	if _, ok := r.get("b"); ok {
		t.Fatal("get answered with no event stream open")
	}
}

// A reattach to a live session asks the engine nothing before the replay:
// the registry's lookup is answered from what Watch keeps.
func TestReattachToALiveSessionInspectsNothing(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.running=" + randomHex(6)
	name, _ := runContainer(t, "--label", label)
	b, cc := newInspectCountingBackend(t, label)
	reg, err := sessions.New(sessions.Config{Backend: b, Shell: []string{"/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := reg.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	waitWatching(t, b)
	ctx := testContext(t)
	first, err := reg.Attach(ctx, name, sessions.AttachOptions{Size: sessions.DefaultSize})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	id := first.Info().Session
	first.Detach()
	before := cc.inspects.Load()
	for range 3 {
		c, err := reg.Attach(ctx, name, sessions.AttachOptions{Size: sessions.DefaultSize})
		if err != nil {
			t.Fatalf("reattach: %v", err)
		}
		if got := c.Info().Session; got != id || c.Info().New {
			t.Fatalf("reattach joined session %s (new %v), want the live %s", got, c.Info().New, id)
		}
		c.Detach()
	}
	if got := cc.inspects.Load() - before; got != 0 {
		t.Fatalf("three reattaches to a live session made %d container inspects, want 0", got)
	}
}
