package docker

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/sessions"
)

// EnvSession is the environment variable that marks every process of a
// session (procmark.KillScript finds them by it).
const EnvSession = procmark.EnvSession

// detachKeys replaces the daemon's default detach sequence (Ctrl-P Ctrl-Q),
// which would swallow a lone Ctrl-P until the next key and let a user orphan
// the shell. Only the first key is ever held back, and only when it arrives
// alone; Ctrl-@ (NUL, "set mark") has no visible effect of its own.
const detachKeys = `ctrl-@,ctrl-],ctrl-@,ctrl-^,ctrl-@,ctrl-_,ctrl-@,ctrl-]`

// engine is the Backend as the exec host sees it (exechost.Executor).
type engine struct{ *Backend }

// Exec creates an exec of argv in the container and attaches to it (which
// starts it). A TTY exec's stream is raw; any other's is demultiplexed.
func (e engine) Exec(ctx context.Context, inst sessions.Instance, argv []string, opts exechost.ExecOptions) (exechost.Stream, error) {
	var console *[2]uint
	if opts.TTY {
		// The exec starts at the client's size where the engine takes it
		// (API 1.42+): no resize round trip before the first prompt.
		console = &[2]uint{uint(opts.Size.Rows), uint(opts.Size.Cols)}
	}
	eo := container.ExecOptions{
		ConsoleSize: console, Tty: opts.TTY, Env: opts.Env, Cmd: argv,
		AttachStdin: opts.Stdin, AttachStdout: true, AttachStderr: true,
	}
	if opts.TTY {
		eo.DetachKeys = detachKeys
	}
	created, err := e.cli.ContainerExecCreate(ctx, inst.ID, eo)
	if err != nil {
		if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
			return nil, fmt.Errorf("exec in %q: %w: %w", inst.Name, sessions.ErrNotFound, err)
		}
		return nil, e.engineErr(fmt.Sprintf("exec in %q", inst.Name), err)
	}
	hr, err := e.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: opts.TTY, ConsoleSize: console})
	if err != nil {
		// The exec may have started before the attach failed.
		return nil, fmt.Errorf("%w: %w", exechost.ErrMaybeStarted, e.engineErr(fmt.Sprintf("attach exec in %q", inst.Name), err))
	}
	s := &stream{e: e, name: inst.Name, id: created.ID, hr: hr, r: hr.Reader}
	if !opts.TTY {
		s.demux = newDemuxReader(hr.Reader, opts.Stderr)
		s.r = s.demux
	}
	if !opts.TTY || consoleSizeAtCreate(e.cli.ClientVersion()) {
		return s, nil // created at its size (the client library drops ConsoleSize below 1.42)
	}
	// An older engine: the attach started the exec, so this resize cannot
	// hit the daemon's 10 s wait for an exec that has not started.
	if err := s.Resize(ctx, opts.Size); err != nil {
		if ctx.Err() != nil { // the caller gave up: leave nothing behind
			_ = s.Close()
			return nil, fmt.Errorf("%w: %w", exechost.ErrMaybeStarted, ctx.Err())
		}
		// A command that already ended (ssh -t I@HOST true) cannot be
		// resized: nothing is wrong then.
		if info, ierr := e.cli.ContainerExecInspect(ctx, created.ID); ierr == nil && !info.Running {
			e.log.Debug("docker: initial resize after the exec ended", "instance", inst.Name)
		} else {
			e.log.Warn("docker: initial resize failed", "instance", inst.Name, "err", err)
		}
	}
	return s, nil
}

// consoleSizeAtCreate reports whether an engine speaking API version v
// creates an exec at the ConsoleSize it is given (Engine API 1.42, Docker
// 23): then Start needs no resize after the attach.
func consoleSizeAtCreate(v string) bool {
	return v != "" && versions.GreaterThanOrEqualTo(v, "1.42")
}

// stream is one exec and its hijacked connection.
type stream struct {
	e     engine
	name  string
	id    string
	hr    types.HijackedResponse
	r     io.Reader
	demux *demuxReader // without a TTY

	wmu  sync.Mutex // serializes writes to the connection
	once sync.Once
}

func (s *stream) Read(b []byte) (int, error) { return s.r.Read(b) }

func (s *stream) Write(b []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.hr.Conn.Write(b)
}

func (s *stream) CloseWrite() error { return s.hr.CloseWrite() }

func (s *stream) Resize(ctx context.Context, size sessions.Size) error {
	err := s.e.cli.ContainerExecResize(ctx, s.id, container.ResizeOptions{Height: uint(size.Rows), Width: uint(size.Cols)})
	if err != nil {
		return s.e.engineErr("resize exec", err)
	}
	return nil
}

// Wait polls the exec until the engine reports it ended (that lags the end
// of the stream by a few milliseconds) and returns its exit code.
func (s *stream) Wait(ctx context.Context) (int, error) {
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		info, err := s.e.cli.ContainerExecInspect(ctx, s.id)
		switch {
		case cerrdefs.IsNotFound(err):
			return -1, fmt.Errorf("exec in %q: %w: %w", s.name, exechost.ErrNoStatus, err)
		case err != nil && ctx.Err() != nil:
			return -1, fmt.Errorf("wait for exec in %q: %w", s.name, ctx.Err())
		case err != nil:
			return -1, s.e.engineErr(fmt.Sprintf("wait for exec in %q", s.name), err)
		case !info.Running:
			return info.ExitCode, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return -1, fmt.Errorf("wait for exec in %q: %w", s.name, ctx.Err())
		case <-t.C:
		}
	}
}

func (s *stream) Stderr() string {
	if s.demux == nil {
		return ""
	}
	return s.demux.Stderr()
}

func (s *stream) Close() error {
	s.once.Do(func() { _ = s.hr.Conn.Close() })
	return nil
}

// State says whether the container still runs an instance's processes:
// removed or stopped is Gone, restarting Stopping, paused Paused.
func (e engine) State(ctx context.Context, inst sessions.Instance) (exechost.State, error) {
	info, err := e.cli.ContainerInspect(ctx, inst.ID)
	switch {
	case cerrdefs.IsNotFound(err):
		return exechost.Gone, nil
	case err != nil:
		return exechost.Running, e.engineErr("inspect container", err)
	}
	switch st := info.State; {
	case st == nil || !st.Running:
		return exechost.Gone, nil
	case st.Paused:
		return exechost.Paused, nil
	case st.Restarting:
		return exechost.Stopping, nil
	}
	return exechost.Running, nil
}
