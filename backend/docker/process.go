package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/sessions"
)

// EnvSession is the environment variable that marks every process of a
// session (procmark.KillScript finds them by it).
const EnvSession = procmark.EnvSession

// autoShell starts bash as a login shell when the container has it, else sh.
// It contains no user data: the session id travels in the environment.
const autoShell = `if command -v bash >/dev/null 2>&1; then exec bash -il; fi; exec sh -l`

// detachKeys replaces the daemon's default detach sequence (Ctrl-P Ctrl-Q),
// which would swallow a lone Ctrl-P until the next key and let a user orphan
// the shell. Only the first key is ever held back, and only when it arrives
// alone; Ctrl-@ (NUL, "set mark") has no visible effect of its own.
const detachKeys = `ctrl-@,ctrl-],ctrl-@,ctrl-^,ctrl-@,ctrl-_,ctrl-@,ctrl-]`

// Start runs the shell in the container as a TTY exec marked with
// TERMGATE_SESSION=spec.SessionID, attaches to it and sets its window size.
func (b *Backend) Start(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec) (sessions.Process, error) {
	if inst.ID == "" {
		return nil, fmt.Errorf("start shell in %q: empty container id: %w", inst.Name, sessions.ErrNotFound)
	}
	sh, err := procmark.ForStart(b.gatewayID, inst.Name, spec)
	if err != nil {
		return nil, err
	}
	marker, size, term := sh.Marker, sh.Size, sh.Term
	if b.held != nil {
		p, err := b.startHeld(ctx, inst, spec, size, term)
		var cannot *errCannotHold
		if !errors.As(err, &cannot) {
			return p, err
		}
		b.log.Warn("docker: this instance cannot hold a durable session; starting an ordinary one, which ends with the gateway",
			"instance", inst.Name, "reason", cannot.why)
	}
	// The exec starts at the client's size where the engine takes it (API
	// 1.42+): no resize round trip before the first prompt, and the shell
	// never draws at a default size first.
	console := &[2]uint{uint(size.Rows), uint(size.Cols)}
	created, err := b.cli.ContainerExecCreate(ctx, inst.ID, container.ExecOptions{
		ConsoleSize:  console,
		Tty:          true,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		DetachKeys:   detachKeys,
		Env:          []string{"TERM=" + term, EnvSession + "=" + marker},
		Cmd:          b.command(spec.Shell),
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
			return nil, fmt.Errorf("start shell in %q: %w: %w", inst.Name, sessions.ErrNotFound, err)
		}
		return nil, b.engineErr(fmt.Sprintf("start shell in %q", inst.Name), err)
	}
	hr, err := b.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: true, ConsoleSize: console})
	if err != nil {
		// The exec may have started before the attach failed; make sure
		// no shell is left behind.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		_, kerr := b.killGrouped(kctx, inst.ID, marker)
		cancel()
		if kerr != nil {
			b.log.Warn("docker: cleaning up after a failed attach", "instance", inst.Name, "err", kerr)
		}
		return nil, b.engineErr(fmt.Sprintf("attach shell in %q", inst.Name), err)
	}
	p := &process{
		b:         b,
		name:      inst.Name,
		container: inst.ID,
		execID:    created.ID,
		session:   marker,
		conn:      hr.Conn,
		r:         hr.Reader,
	}
	if consoleSizeAtCreate(b.cli.ClientVersion()) {
		return p, nil // created at its size (the client library drops ConsoleSize below 1.42)
	}
	// An older engine: the attach started the exec, so this resize cannot
	// hit the daemon's 10 s wait for an exec that has not started.
	if err := p.Resize(ctx, size); err != nil {
		if ctx.Err() != nil { // the caller gave up: leave nothing behind
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
			defer cancel()
			_ = p.Kill(kctx)
			return nil, fmt.Errorf("start shell in %q: %w", inst.Name, ctx.Err())
		}
		b.log.Warn("docker: initial resize failed", "instance", inst.Name, "err", err)
	}
	return p, nil
}

// consoleSizeAtCreate reports whether an engine speaking API version v
// creates an exec at the ConsoleSize it is given (Engine API 1.42, Docker
// 23): then Start needs no resize after the attach.
func consoleSizeAtCreate(v string) bool {
	return v != "" && versions.GreaterThanOrEqualTo(v, "1.42")
}

func (b *Backend) command(shell []string) []string {
	switch {
	case len(shell) > 0:
		return append([]string(nil), shell...)
	case len(b.shell) > 0:
		return append([]string(nil), b.shell...)
	}
	return []string{"/bin/sh", "-c", autoShell, "termgate-shell"}
}

// process is one TTY exec and its hijacked stream (raw: a TTY exec's output
// is not multiplexed).
type process struct {
	b         *Backend
	name      string
	container string
	execID    string
	session   string
	conn      net.Conn
	r         *bufio.Reader

	wmu    sync.Mutex // serializes writes to conn
	closed atomic.Bool
	once   sync.Once

	kmu    sync.Mutex // serializes Kill
	killed bool
	// ending is set once Kill starts: the end of the stream is then the
	// kill's, and Read ends with io.EOF without asking the engine why.
	ending atomic.Bool
}

// Read returns the shell's output. Once the shell ended it says how (see
// ended): a *sessions.ExitError, or sessions.ErrInstanceGone when the
// container stopped; io.EOF after Kill or when the engine cannot tell.
func (p *process) Read(buf []byte) (int, error) {
	n, err := p.r.Read(buf)
	switch {
	case err == nil:
		return n, nil
	case p.closed.Load() || p.ending.Load() || errors.Is(err, net.ErrClosed):
		return n, io.EOF
	case err == io.EOF:
		return n, p.ended()
	}
	return n, fmt.Errorf("read from shell in %q: %w", p.name, err)
}

func (p *process) Write(buf []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	n, err := p.conn.Write(buf)
	if err != nil {
		return n, fmt.Errorf("write to shell in %q: %w", p.name, err)
	}
	return n, nil
}

func (p *process) Resize(ctx context.Context, size sessions.Size) error {
	if !size.Valid() {
		return fmt.Errorf("resize shell in %q to %dx%d: %w", p.name, size.Cols, size.Rows, sessions.ErrBadSize)
	}
	err := p.b.cli.ContainerExecResize(ctx, p.execID, container.ResizeOptions{
		Height: uint(size.Rows),
		Width:  uint(size.Cols),
	})
	if err != nil {
		return p.b.engineErr(fmt.Sprintf("resize shell in %q", p.name), err)
	}
	return nil
}

// Wait polls the exec until the engine reports it ended (that lags the end
// of the stream by a few milliseconds) and returns its exit code.
func (p *process) Wait(ctx context.Context) (int, error) {
	delay := 5 * time.Millisecond
	for {
		info, err := p.b.cli.ContainerExecInspect(ctx, p.execID)
		if err != nil {
			return -1, p.b.engineErr(fmt.Sprintf("wait for shell in %q", p.name), err)
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return -1, fmt.Errorf("wait for shell in %q: %w", p.name, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// close releases the stream; a Read blocked on it returns io.EOF.
func (p *process) close() {
	p.once.Do(func() {
		p.closed.Store(true)
		_ = p.conn.Close()
	})
}
