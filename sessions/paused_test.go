package sessions

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/termgate/termgate/internal/termtest"
)

// pause plays docker pause (paused) or unpause on the fake backend: Lookup
// says so, and Watch reports it.
func pause(fb *fakeBackend, name string, paused bool) {
	<-fb.watchOn
	fb.mu.Lock()
	fb.paused[name] = paused
	ev := fb.events
	fb.mu.Unlock()
	ev(InstanceEvent{Instance: Instance{Name: name, ID: "id-" + name}, Paused: paused, Unpaused: !paused})
}

// A paused instance keeps its session (issue 20, D2): the attached client
// is told in band, stays attached, and the same shell goes on after the
// unpause; an attach or a reset meanwhile is refused as paused.
func TestPausedInstanceKeepsItsSession(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	defer c.Detach()
	p := fb.last()

	pause(fb, "web1", true)
	_, n := readEvent[*Notice](t, c)
	if !strings.Contains(n.Message, "paused") {
		t.Fatalf("after the pause Take gave %v, want a notice that the instance paused", n)
	}
	if c.Cause() != nil {
		t.Fatalf("client closed by the pause: %v", c.Cause())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.Attach(ctx, "web1", AttachOptions{}); !errors.Is(err, ErrPaused) {
		t.Errorf("attach while paused: %v, want ErrPaused", err)
	}
	if _, err := r.Reset(ctx, "web1", "admin"); !errors.Is(err, ErrPaused) {
		t.Errorf("reset while paused: %v, want ErrPaused", err)
	}

	pause(fb, "web1", false)
	_, n = readEvent[*Notice](t, c)
	if !strings.Contains(n.Message, "unpaused") {
		t.Fatalf("after the unpause Take gave %v, want a notice that the instance runs again", n)
	}
	p.emit("still here\n")
	if out, err := readAtLeast(t, c, len("still here\n")); err != nil || string(out) != "still here\n" {
		t.Fatalf("output after the unpause: %q, %v", out, err)
	}
	if _, err := c.Write([]byte("ls\r")); err != nil {
		t.Fatalf("input after the unpause: %v", err)
	}
	if fb.starts.Load() != 1 || p.killCalled.Load() {
		t.Fatalf("starts=%d killed=%v: the pause must neither kill nor replace the shell", fb.starts.Load(), p.killCalled.Load())
	}
	if got := p.inputString(); got != "ls\r" {
		t.Fatalf("the shell got %q, want the input typed after the unpause", got)
	}
}

// A kill that fails while the instance is paused (an idle reap, say) is
// not logged as done, blocks a second shell, and is retried as soon as the
// instance is unpaused (not at its next backoff).
func TestKillFailedWhilePausedIsRetriedOnUnpause(t *testing.T) {
	var logs termtest.SyncBuffer
	clock := clockwork.NewFakeClock() // never advanced: the backoff never ends
	r, fb := newTestRegistry(t, Config{Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	pause(fb, "web1", true)
	p.killFails.Store(1) // "container is paused"
	s, _ := c.session()
	s.Close(ErrIdle)
	waitFor(t, func() bool { return s.killFailed.Load() })
	if strings.Contains(logs.String(), "ended with it") {
		t.Fatalf("a failed kill was logged as done:\n%s", logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fb.mu.Lock()
	fb.paused["web1"] = false // the engine unpaused it; Watch has not said so yet
	fb.mu.Unlock()
	if _, err := r.Attach(ctx, "web1", AttachOptions{}); !errors.Is(err, ErrPreviousShellAlive) {
		t.Fatalf("attach while the old shell's kill fails: %v, want ErrPreviousShellAlive", err)
	}
	pause(fb, "web1", false)
	waitFor(t, func() bool { return p.killCalled.Load() && !s.killFailed.Load() })
	c2 := attach(t, r, "web1", AttachOptions{})
	defer c2.Detach()
	if !c2.Info().New || fb.starts.Load() != 2 || p.kills.Load() != 2 {
		t.Fatalf("after the unpause: new=%v starts=%d kills=%d, want a new session, 2 starts, 2 kill attempts", c2.Info().New, fb.starts.Load(), p.kills.Load())
	}
}
