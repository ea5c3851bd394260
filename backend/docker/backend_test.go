package docker

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/termgate/termgate/sessions"
)

func TestLookup(t *testing.T) {
	needEngine(t)
	t.Parallel()
	labelled, labelledID := runContainer(t, "--label", runLabel)
	plain, plainID := runContainer(t)
	paused, _ := runContainer(t, "--label", runLabel)
	dockerCLI(t, "pause", paused)
	pausedPlain, _ := runContainer(t)
	dockerCLI(t, "pause", pausedPlain)
	exited := "tgtest-" + randomHex(6)
	dockerCLI(t, "run", "--network", "none", "--label", runLabel, "--name", exited, testImage, "true")
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", exited).Run() })

	ctx := testContext(t) // after the containers: starting them takes long on a loaded host
	key, _, _ := strings.Cut(runLabel, "=")
	any := newBackend(t, Config{})
	byLabel := newBackend(t, Config{Label: runLabel})
	byKey := newBackend(t, Config{Label: key})
	wrongValue := newBackend(t, Config{Label: key + "=other"})
	notSelf := newBackend(t, Config{SelfID: labelledID})
	notSelfShort := newBackend(t, Config{SelfID: plainID[:12]})

	ok := []struct {
		b        *Backend
		name, id string
		desc     string
	}{
		{any, labelled, labelledID, "running"},
		{any, plain, plainID, "running, no label configured"},
		{byLabel, labelled, labelledID, "KEY=VALUE label present"},
		{byKey, labelled, labelledID, "KEY label present"},
		{notSelf, plain, plainID, "someone else's container"},
	}
	for _, c := range ok {
		inst, err := c.b.Lookup(ctx, c.name)
		if err != nil {
			t.Errorf("%s: Lookup(%q): %v", c.desc, c.name, err)
			continue
		}
		if inst != (sessions.Instance{Name: c.name, ID: c.id}) {
			t.Errorf("%s: Lookup(%q) = %+v, want ID %s", c.desc, c.name, inst, c.id)
		}
	}

	refused := []struct {
		b    *Backend
		name string
		desc string
	}{
		{any, "tgtest-missing-" + randomHex(4), "missing"},
		{any, exited, "exited"},
		{byLabel, pausedPlain, "paused, label missing"},
		{byLabel, plain, "label missing"},
		{wrongValue, labelled, "label value differs"},
		{any, labelledID[:12], "ID prefix instead of a name"},
		{notSelf, labelled, "own container (full ID)"},
		{notSelfShort, plain, "own container (12-character ID)"},
	}
	for _, c := range refused {
		_, err := c.b.Lookup(ctx, c.name)
		if !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("%s: Lookup(%q) = %v, want ErrNotFound", c.desc, c.name, err)
		}
	}

	// A paused instance is refused as paused, not as missing (issue 20,
	// D2): it carries on once unpaused, and so does its session.
	_, err := byLabel.Lookup(ctx, paused)
	if !errors.Is(err, sessions.ErrPaused) || errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Lookup(paused %q) = %v, want ErrPaused (not ErrNotFound)", paused, err)
	}

	if _, err := any.Lookup(ctx, "../etc"); !errors.Is(err, sessions.ErrBadName) {
		t.Errorf("Lookup(../etc) = %v, want ErrBadName", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Label: "=x"}, {SelfID: "abc"}} {
		if b, err := New(cfg); err == nil {
			_ = b.Close()
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestPingUnreachable(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.WithHost("unix:///nonexistent/docker.sock"), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	b := newBackend(t, Config{Client: cli})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = b.Ping(ctx)
	if !errors.Is(err, ErrEngineUnreachable) {
		t.Fatalf("Ping = %v, want ErrEngineUnreachable", err)
	}
	for _, want := range []string{"cannot reach the Docker engine at unix:///nonexistent/docker.sock", "start dockerd", "DOCKER_HOST", "--backend local"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ping error %q does not say %q", err, want)
		}
	}
	if _, err := b.Lookup(ctx, "web1"); !errors.Is(err, ErrEngineUnreachable) || errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Lookup with no engine = %v, want ErrEngineUnreachable and not ErrNotFound", err)
	}
}

func TestPing(t *testing.T) {
	needEngine(t)
	t.Parallel()
	if err := newBackend(t, Config{}).Ping(testContext(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}
