package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// Watch reports `docker rename` with the container's new name (no leading
// '/'), as a rename, not as gone.
func TestWatchReportsRename(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.rename=" + randomHex(6)
	name, id := runContainer(t, "--label", label)
	b := newBackend(t, Config{Label: label})
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

	renamed := name + "-renamed"
	t.Cleanup(func() { dockerCLI(t, "rm", "-f", renamed) })
	dockerCLI(t, "rename", name, renamed)
	select {
	case ev := <-evs:
		want := sessions.InstanceEvent{Instance: sessions.Instance{Name: renamed, ID: id}}
		if ev != want {
			t.Fatalf("event %+v, want %+v", ev, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event within 10 s of docker rename")
	}
}

// After `docker rename`, the registry's session carries the new name, an
// attach by the new name joins it, and a client whose credentials do not
// allow the new name is disconnected (issue 9 item 10).
func TestRenameFollowedBySession(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.rename=" + randomHex(6)
	name, _ := runContainer(t, "--label", label)
	renamed := "private-" + randomHex(4)
	t.Cleanup(func() { dockerCLI(t, "rm", "-f", renamed) })
	b := newBackend(t, Config{Label: label})
	reg, err := sessions.New(sessions.Config{Backend: b})
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
	ctx := testContext(t)
	onlyTgtest := func(instance string) error {
		if !strings.HasPrefix(instance, "tgtest-") {
			return fmt.Errorf("not allowed to reach %q", instance)
		}
		return nil
	}
	limited, err := reg.Attach(ctx, name, sessions.AttachOptions{Size: sessions.DefaultSize, Label: "limited", Allowed: onlyTgtest})
	if err != nil {
		t.Fatalf("Attach(%s): %v", name, err)
	}
	go func() { _, _ = io.Copy(io.Discard, termtest.NewClientReader[sessions.Event](limited)) }()
	if got := reg.Sessions(); len(got) != 1 || got[0].Instance != name {
		t.Fatalf("sessions before the rename: %+v", got)
	}

	dockerCLI(t, "rename", name, renamed)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := reg.Sessions()
		if len(got) == 1 && got[0].Instance == renamed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions 10 s after docker rename %s %s: %+v", name, renamed, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-limited.Done():
		var revoked *sessions.RevokedError
		if !errors.As(limited.Cause(), &revoked) {
			t.Errorf("limited client ended with %v, want a RevokedError", limited.Cause())
		}
	case <-time.After(10 * time.Second):
		t.Errorf("a client not allowed %q stayed attached after the rename", renamed)
	}

	c, err := reg.Attach(ctx, renamed, sessions.AttachOptions{Size: sessions.DefaultSize, Label: "any"})
	if err != nil {
		t.Fatalf("Attach(%s): %v", renamed, err)
	}
	defer c.Detach()
	if info := c.Info(); info.Instance != renamed || info.New {
		t.Errorf("attach by the new name = %+v, want the existing session named %s", info, renamed)
	}
	if _, err := reg.Attach(ctx, name, sessions.AttachOptions{Size: sessions.DefaultSize}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Attach by the old name = %v, want ErrNotFound", err)
	}
}
