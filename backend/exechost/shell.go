package exechost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/sessions"
)

// autoShell starts bash as a login shell when the instance has it, else sh.
// It contains no user data: the session id travels in the environment.
const autoShell = `if command -v bash >/dev/null 2>&1; then exec bash -il; fi; exec sh -l`

// Start runs the shell in the instance as a TTY exec marked with
// TERMGATE_SESSION (procmark), or, on a durable Host, holds it in the
// instance's holder (an instance that cannot host one gets an ordinary
// shell and a warning).
func (h *Host) Start(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec) (sessions.Process, error) {
	if inst.ID == "" {
		return nil, fmt.Errorf("start shell in %q: empty instance id: %w", inst.Name, sessions.ErrNotFound)
	}
	// Never beside an earlier run's shells (a held one's exec carries no
	// marker for gatedExecutor to see).
	if err := h.waitSwept(ctx, inst); err != nil {
		return nil, err
	}
	sh, err := forStart(h.gatewayID, inst.Name, spec)
	if err != nil {
		return nil, err
	}
	if spec.Login != "" {
		// Before anything starts: a login the instance cannot be
		// starts nothing (a held session's serve checks again).
		if err := h.checkLogin(ctx, inst, spec.Login); err != nil {
			return nil, err
		}
	}
	toolbox, err := h.useToolbox(ctx, inst, len(spec.Shell) > 0)
	if err != nil {
		if h.gone(context.WithoutCancel(ctx), inst) { // the look for /bin/sh met a stopped instance
			return nil, fmt.Errorf("start shell in %q: %w: %w", inst.Name, sessions.ErrNotFound, err)
		}
		return nil, fmt.Errorf("start shell in %q: %w", inst.Name, err)
	}
	if toolbox && spec.Login != "" {
		return nil, &sessions.LoginError{Login: spec.Login, Why: fmt.Sprintf(
			"login refused: instance %q has no shell, and termgate's toolbox runs as the instance's default user only; connect without LOGIN@", inst.Name)}
	}
	if h.held != nil && toolbox { // the toolbox is not held (yet)
		h.log.Warn(h.name+": a toolbox session is not held: starting an ordinary one, which ends with the gateway",
			"instance", inst.Name)
	}
	if h.held != nil && !toolbox {
		p, err := h.startHeld(ctx, inst, spec, sh)
		var cannot *CannotHold
		if !errors.As(err, &cannot) {
			return p, err
		}
		h.log.Warn(h.name+": this instance cannot hold a durable session; starting an ordinary one, which ends with the gateway",
			"instance", inst.Name, "reason", cannot.Why)
	}
	argv := h.command(spec.Shell)
	if toolbox {
		if argv, err = h.toolboxArgv(ctx, inst); err != nil {
			return nil, fmt.Errorf("start shell in %q: %w", inst.Name, err)
		}
	}
	if spec.Login != "" {
		if argv, err = h.asCommand(ctx, inst, spec.Login, argv); err != nil {
			return nil, fmt.Errorf("start shell in %q: %w", inst.Name, err)
		}
	}
	s, err := h.x.Exec(ctx, inst, argv, ExecOptions{
		TTY: true, Stdin: true, Size: sh.size,
		Env: append(append(clientEnv(spec.Env), sh.env()...), procmark.EnvSession+"="+sh.marker),
	})
	if err != nil {
		if errors.Is(err, ErrMaybeStarted) { // leave no shell behind
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
			_, kerr := h.kills.Kill(kctx, killKey(inst), sh.marker)
			cancel()
			if kerr != nil {
				h.log.Warn(h.name+": cleaning up after a failed start", "instance", inst.Name, "err", kerr)
			}
		}
		return nil, fmt.Errorf("start shell in %q: %w", inst.Name, err)
	}
	return &Shell{h: h, inst: inst, marker: sh.marker, s: s, toolbox: toolbox}, nil
}

func (h *Host) command(shell []string) []string {
	switch {
	case len(shell) > 0:
		return append([]string(nil), shell...)
	case len(h.shell) > 0:
		return append([]string(nil), h.shell...)
	}
	return []string{"/bin/sh", "-c", autoShell, "termgate-shell"}
}

// Shell is an ordinary session's process: one TTY exec.
type Shell struct {
	h      *Host
	inst   sessions.Instance
	marker string
	s      Stream
	// toolbox: the shell is termgate's toolbox (toolbox.go).
	toolbox bool

	wmu    sync.Mutex // serializes writes to s
	closed atomic.Bool
	once   sync.Once

	kmu    sync.Mutex // serializes Kill
	killed bool
	// ending is set once Kill starts: the end of the stream is then the
	// kill's, and Read ends with io.EOF without asking why.
	ending atomic.Bool
}

// Toolbox reports whether the shell is termgate's toolbox
// (sessions.ToolboxProcess).
func (p *Shell) Toolbox() bool { return p.toolbox }

// Read returns the shell's output. Once the shell ended it says how (see
// ended); io.EOF after Kill, or when the backend cannot tell.
func (p *Shell) Read(buf []byte) (int, error) {
	n, err := p.s.Read(buf)
	switch {
	case err == nil:
		return n, nil
	case p.closed.Load() || p.ending.Load():
		return n, io.EOF
	}
	return n, p.ended(err)
}

// ended is the cause Read ends with once the stream ended with readErr:
// ErrInstanceGone when the instance stopped, else the exec's exit status;
// io.EOF when the backend cannot tell (the registry reports a lost backend).
func (p *Shell) ended(readErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	if st, err := p.h.x.State(ctx, p.inst); err == nil && st != Running {
		return sessions.ErrInstanceGone
	}
	code, err := p.s.Wait(ctx)
	if err != nil {
		if !errors.Is(readErr, io.EOF) {
			p.h.log.Warn(p.h.name+": terminal stream broke", "instance", p.inst.Name, "err", readErr)
		}
		return io.EOF
	}
	return p.h.exitCause(ctx, p.inst, code, p.ending.Load)
}

func (p *Shell) Write(buf []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	n, err := p.s.Write(buf)
	if err != nil {
		return n, fmt.Errorf("write to shell in %q: %w", p.inst.Name, err)
	}
	return n, nil
}

func (p *Shell) Resize(ctx context.Context, size sessions.Size) error {
	if !size.Valid() {
		return fmt.Errorf("resize shell in %q to %dx%d: %w", p.inst.Name, size.Cols, size.Rows, sessions.ErrBadSize)
	}
	if err := p.s.Resize(ctx, size); err != nil {
		return fmt.Errorf("resize shell in %q: %w", p.inst.Name, err)
	}
	return nil
}

// Wait returns the shell's exit code once the exec ended.
func (p *Shell) Wait(ctx context.Context) (int, error) {
	code, err := p.s.Wait(ctx)
	if err != nil {
		return -1, fmt.Errorf("wait for shell in %q: %w", p.inst.Name, err)
	}
	return code, nil
}

// Kill ends the shell and every process of its session, background and
// setsid jobs included (procmark.KillScript in a second exec), then drops
// the stream. It is idempotent, and quick when the instance is gone. When
// the backend cannot be reached it fails: the processes may live on, so the
// caller calls it again.
func (p *Shell) Kill(ctx context.Context) error {
	p.kmu.Lock()
	defer p.kmu.Unlock()
	if p.killed {
		return nil
	}
	p.ending.Store(true)
	procs, err := p.h.kills.Kill(ctx, killKey(p.inst), p.marker)
	if err == nil {
		err = p.waitEnded(ctx)
	}
	p.Abandon()
	if err != nil {
		return fmt.Errorf("kill shell in %q: %w", p.inst.Name, err)
	}
	p.killed = true
	p.h.log.Debug(p.h.name+": killed session", "instance", p.inst.Name, "session", p.marker, "processes", len(procs))
	return nil
}

// Abandon drops the stream and leaves the shell running, as a gateway
// that dies does; a blocked Read returns io.EOF.
func (p *Shell) Abandon() {
	p.once.Do(func() {
		p.closed.Store(true)
		_ = p.s.Close()
	})
}
