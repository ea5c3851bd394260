package docker

import (
	"context"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/termgate/termgate/sessions"
)

// How a shell ended, from the engine's view. The registry takes the cause a
// Process's Read ends with as final, so the backend tells a shell that ended
// because its container stopped (sessions.ErrInstanceGone) from one that
// exited, or was killed by a signal, inside a running container
// (*sessions.ExitError).

// defaultStopGrace is Config.StopGrace's default.
const defaultStopGrace = 2 * time.Second

// stopPoll is how often a stopping container's state is checked.
const stopPoll = 50 * time.Millisecond

// containerGone reports whether the container is no instance any more:
// removed, stopped, paused or restarting (what Lookup refuses). It fails
// only when the engine cannot tell.
func (b *Backend) containerGone(ctx context.Context, id string) (bool, error) {
	info, err := b.cli.ContainerInspect(ctx, id)
	switch {
	case cerrdefs.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, b.engineErr("inspect container", err)
	}
	st := info.State
	return st == nil || !st.Running || st.Paused || st.Restarting, nil
}

// stopping reports whether the container stops within StopGrace. When a
// container's main process ends, the kernel kills every process in its PID
// namespace, so an exec (or a holder) may see its shell killed by SIGKILL a
// little before the engine reports the container as stopped. It gives up
// early, reporting false, when abandon says the shell is being killed on
// purpose (nobody waits for the cause then).
func (b *Backend) stopping(ctx context.Context, id string, abandon func() bool) bool {
	deadline := time.Now().Add(b.stopGrace)
	for {
		if gone, err := b.containerGone(ctx, id); err == nil && gone {
			return true
		}
		if abandon() || !time.Now().Before(deadline) {
			return false
		}
		t := time.NewTimer(stopPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// exitCause is the cause for a shell that ended with code in the container:
// a shell killed by a signal as its container stops ended with it.
func (b *Backend) exitCause(ctx context.Context, id string, code int, abandon func() bool) error {
	if code >= 128 && b.stopping(ctx, id, abandon) {
		return sessions.ErrInstanceGone
	}
	return &sessions.ExitError{Code: code}
}

// ended is the cause an ordinary exec's Read ends with once its stream
// ended: ErrInstanceGone when the container stopped, else the exec's exit
// status. It returns io.EOF when the engine cannot tell (the registry then
// classifies the end itself, and reports a lost engine).
func (p *process) ended() error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	if gone, err := p.b.containerGone(ctx, p.container); err == nil && gone {
		return sessions.ErrInstanceGone
	}
	code, err := p.Wait(ctx)
	if err != nil {
		return io.EOF
	}
	return p.b.exitCause(ctx, p.container, code, p.ending.Load)
}
