package exechost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// Run starts a one-off command (ssh INSTANCE@HOST CMD...) beside the
// instance's session: `/bin/sh -c LINE`, or the toolbox's -c LINE when the
// instance has no /bin/sh (runArgv). The process is marked with a marker of its
// own (procmark: GATEWAYID.c-RANDOM), so that Close ends it and everything
// it started, as Shell.Kill does for a shell.
func (h *Host) Run(ctx context.Context, inst sessions.Instance, cmd remote.Command) (remote.Process, error) {
	if inst.ID == "" {
		return nil, fmt.Errorf("run in %q: empty instance id: %w", inst.Name, sessions.ErrNotFound)
	}
	argv, err := h.runArgv(ctx, inst, cmd.Line, cmd.Login != "")
	if err != nil {
		return nil, err
	}
	if argv, err = h.loginArgv(ctx, inst, cmd.Login, argv); err != nil {
		return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
	}
	marker := h.oneOffMarker("c")
	opts := ExecOptions{Stdin: true, TTY: cmd.TTY}
	opts.Env = append(append(opts.Env, cmd.Env...), procmark.EnvSession+"="+marker)
	if cmd.TTY {
		size, err := ttySize(cmd.Size)
		if err != nil { // what the user asked for is wrong
			return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
		}
		opts.Size = size
		opts.Env = append(opts.Env, "TERM="+termOrDefault(cmd.Term))
	} else {
		opts.Stderr = cmd.Stderr
		if opts.Stderr == nil {
			opts.Stderr = io.Discard
		}
	}
	s, err := h.x.Exec(ctx, inst, argv, opts)
	if err != nil {
		if errors.Is(err, ErrMaybeStarted) { // leave no command behind
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
			_, kerr := h.kills.Kill(kctx, killKey(inst), marker)
			cancel()
			if kerr != nil {
				h.log.Warn(h.name+": cleaning up after a failed command start", "instance", inst.Name, "err", kerr)
			}
		}
		return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
	}
	return &command{h: h, inst: inst, marker: marker, s: s, tty: cmd.TTY}, nil
}

// sweepGather is how long the sweep after a command's normal exit waits
// for others to share its exec. The client has its exit status already;
// what the command left in the background lives this much longer.
const sweepGather = time.Second

// runArgv is the argv for line: the toolbox's -c where it is used
// (useToolbox), else the instance's /bin/sh -c when it has one (as
// OpenSSH hands a command to the login shell), else line's words, run
// directly (an image without a shell, --toolbox never).
func (h *Host) runArgv(ctx context.Context, inst sessions.Instance, line string, login bool) ([]string, error) {
	toolbox, err := h.useToolbox(ctx, inst, false)
	if err != nil {
		return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
	}
	if toolbox && !login { // as a login: the words, run directly, as before
		argv, err := h.toolboxArgv(ctx, inst)
		if err != nil {
			return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
		}
		return append(argv, "-c", line), nil
	}
	shell, err := h.hasShell(ctx, inst)
	if err != nil {
		return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
	}
	if shell {
		return []string{"/bin/sh", "-c", line}, nil
	}
	words := strings.Fields(line)
	if len(words) == 0 {
		return nil, fmt.Errorf("run in %q: empty command line", inst.Name)
	}
	return words, nil
}

// oneOffMarker is a fresh marker for one command ("c") or tool ("t"):
// KIND-RANDOM under the gateway's id, so that a Sweep after a crash ends
// what it left.
func (h *Host) oneOffMarker(kind string) string {
	m := kind + "-" + randomSuffix()
	if h.gatewayID != "" {
		m = h.gatewayID + "." + m
	}
	return m
}

// command is a running one-off command: one exec.
type command struct {
	h      *Host
	inst   sessions.Instance
	marker string
	s      Stream
	tty    bool

	wmu    sync.Mutex  // serializes writes to s
	exited atomic.Bool // Wait had the exit status: Close may gather
	closed atomic.Bool
	once   sync.Once
	err    error // Close's, set in once
}

func (c *command) Read(b []byte) (int, error) {
	n, err := c.s.Read(b)
	if err != nil && c.closed.Load() {
		return n, io.EOF
	}
	return n, err
}

func (c *command) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.s.Write(b)
}

// CloseWrite ends stdin. A terminal has no end of input of its own (with
// OpenSSH's sshd the client's EOF changes nothing there), and the Docker
// engine hangs a TTY exec's terminal up on it, losing the output not yet
// read: with a TTY it does nothing.
func (c *command) CloseWrite() error {
	if c.tty {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.s.CloseWrite()
}

func (c *command) Resize(ctx context.Context, size sessions.Size) error {
	if !c.tty {
		return nil // nothing to resize
	}
	if !size.Valid() {
		return fmt.Errorf("resize command in %q to %dx%d: %w", c.inst.Name, size.Cols, size.Rows, sessions.ErrBadSize)
	}
	return c.s.Resize(ctx, size)
}

// Wait returns the exit status: the backends give no signal, so a process
// killed by one has the shell's 128+n as its code.
func (c *command) Wait(ctx context.Context) (remote.Exit, error) {
	code, err := c.s.Wait(ctx)
	if err != nil {
		return remote.Exit{}, fmt.Errorf("wait for command in %q: %w", c.inst.Name, err)
	}
	c.exited.Store(true)
	return remote.Exit{Code: code}, nil
}

// Close kills what is left of the command (the process, its background and
// setsid jobs: every process with its marker) with one kill exec, then
// drops the stream. After a normal exit that exec finds nothing or only the
// jobs left behind, and it is not urgent: it waits up to sweepGather for
// the sweeps of other commands in the instance and runs once for all of
// them. A command still running (the client went away) is killed now.
func (c *command) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), killTimeout+sweepGather)
		defer cancel()
		var err error
		if c.exited.Load() {
			_, err = c.h.kills.KillLater(ctx, killKey(c.inst), c.marker, sweepGather)
		} else {
			_, err = c.h.kills.Kill(ctx, killKey(c.inst), c.marker)
		}
		_ = c.s.Close()
		if err != nil && !c.h.gone(ctx, c.inst) {
			c.err = fmt.Errorf("end command in %q: %w", c.inst.Name, err)
		}
	})
	return c.err
}

// KeepWriting wraps a process's stderr sink for the backends: once a write
// to w fails (the client went away) the rest is discarded rather than
// breaking the exec's stream, whose stdout and exit status still matter.
func KeepWriting(w io.Writer) io.Writer { return &keepWriting{w: w} }

type keepWriting struct {
	mu     sync.Mutex // the backends write from one goroutine; cheap insurance
	w      io.Writer
	failed bool
}

func (k *keepWriting) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.failed {
		if _, err := k.w.Write(p); err != nil {
			k.failed = true
		}
	}
	return len(p), nil
}
