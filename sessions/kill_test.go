package sessions

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
)

func TestFailedKillIsRetriedAndBlocksASecondShell(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.killFails.Store(3) // the engine is down for three attempts (about 1.5 s)
	p.exit(0)
	if _, err := readErr(t, c); err == nil {
		t.Fatal("no cause after the shell exited")
	}
	// While the kill keeps failing, the old shell's jobs may still run:
	// no second shell may start beside them.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// After the second failed attempt the failure is recorded for sure
	// (the first attempt's count is taken before it fails).
	waitFor(t, func() bool { return p.kills.Load() >= 2 })
	if _, err := r.Attach(ctx, "web1", AttachOptions{}); !errors.Is(err, ErrPreviousShellAlive) {
		t.Fatalf("attach while the old shell's kill fails: %v, want ErrPreviousShellAlive", err)
	}
	if _, err := r.Reset(ctx, "web1", "admin"); !errors.Is(err, ErrPreviousShellAlive) {
		t.Fatalf("reset while the old shell's kill fails: %v, want ErrPreviousShellAlive", err)
	}
	if n := fb.starts.Load(); n != 1 {
		t.Fatalf("%d shells started, want 1", n)
	}
	// The engine is back: the retry succeeds and the next attach gets a
	// fresh shell (killFailed is cleared just after the kill succeeds).
	s, _ := c.session()
	waitFor(t, func() bool { return p.killCalled.Load() && !s.killFailed.Load() })
	c2 := attach(t, r, "web1", AttachOptions{})
	defer c2.Detach()
	if !c2.Info().New || fb.starts.Load() != 2 || p.kills.Load() != 4 {
		t.Fatalf("after the retry: new=%v starts=%d kills=%d, want a new session, 2 starts, 4 kill attempts", c2.Info().New, fb.starts.Load(), p.kills.Load())
	}
}

func TestKillRetryGivesUpWhenInstanceGone(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.killFails.Store(1000)
	fb.mu.Lock()
	fb.missing["web1"] = true
	fb.mu.Unlock()
	_ = p.outW.CloseWithError(ErrInstanceGone) // the backend says so
	if _, err := readErr(t, c); !errors.Is(err, ErrInstanceGone) {
		t.Fatalf("cause %v, want ErrInstanceGone", err)
	}
	waitFor(t, func() bool { return len(r.Sessions()) == 0 })
	if n := p.kills.Load(); n != 1 {
		t.Fatalf("%d kill attempts on a gone instance, want 1", n)
	}
}

func TestDetachRacingOutputIsNotLoggedAsSlow(t *testing.T) {
	var logs termtest.SyncBuffer
	// Debug: a client's detach is a debug line (the listener logs the
	// info one).
	r, fb := newTestRegistry(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c := attach(t, r, "web1", AttachOptions{Label: "leaving"})
	// The client is closed by its Detach, and output arrives before the
	// Detach removes it from the session: the window the race hits.
	c.close(ErrDetached, true)
	fb.last().emit("output racing the detach\n")
	waitFor(t, func() bool { return r.Sessions()[0].BytesOut > 0 })
	sessionOf(c).detach(c)
	out := logs.String()
	if strings.Contains(out, "fell too far behind") || !strings.Contains(out, "client detached") {
		t.Fatalf("logs misreport a detach:\n%s", out)
	}
}
