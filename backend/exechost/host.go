package exechost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/backend/startup"
	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/sessions"
)

// ExecOptions shape one exec, as client-go's remotecommand does.
type ExecOptions struct {
	TTY   bool          // a terminal: stdout and stderr merged, Resize works
	Stdin bool          // attach stdin (Write, CloseWrite)
	Env   []string      // KEY=VALUE added to the process's environment
	Size  sessions.Size // with TTY: the terminal's size from the start
	// Stderr, when set (without a TTY), receives everything the exec
	// writes to stderr as it comes; Stream.Stderr is then empty.
	Stderr io.Writer
}

// Stream is a started exec.
type Stream interface {
	io.Reader // stdout (with a TTY, the terminal)
	io.Writer // stdin
	CloseWrite() error
	Resize(ctx context.Context, size sessions.Size) error
	// Wait returns the exit status once the exec ended; an error wrapping
	// ErrNoStatus when it ended without one.
	Wait(ctx context.Context) (int, error)
	// Stderr is what the exec wrote to stderr so far (its first 4 KiB;
	// without a TTY).
	Stderr() string
	// Close drops the stream (not the process); a blocked Read returns.
	Close() error
}

// ErrNoStatus: an exec ended (or is gone) without an exit status.
var ErrNoStatus = errors.New("the exec ended without an exit status")

// ErrMaybeStarted wraps an Exec error after which the process may run all
// the same: Start kills the session's marked processes then.
var ErrMaybeStarted = errors.New("the exec may have started")

// ErrRefused wraps an Upload error that says the directory does not take
// the file (read-only, missing): the next directory is tried.
var ErrRefused = errors.New("the directory refuses the upload")

// State is what a backend says about an instance whose exec ended.
type State int

const (
	Running  State = iota // still runs: an exec that ended did so on its own
	Stopping              // being stopped or deleted; its processes are dying
	Paused                // frozen: its processes can be neither run nor killed
	Gone                  // stopped, removed or replaced: nothing of it runs
)

// Executor is what a backend provides: execs and files in its instances,
// and what it knows of them. Everything else is the Host's.
type Executor interface {
	Exec(ctx context.Context, inst sessions.Instance, argv []string, opts ExecOptions) (Stream, error)
	// Upload writes data to dir/name (mode 0700, owned by the exec user),
	// creating dir (0700). A directory that does not take it: ErrRefused;
	// an instance that takes none: *CannotHold.
	Upload(ctx context.Context, inst sessions.Instance, dir, name string, data []byte) error
	// Exists reports which of paths exist in the instance.
	Exists(ctx context.Context, inst sessions.Instance, paths []string) ([]bool, error)
	// State classifies the instance now (how an exec in it ended).
	State(ctx context.Context, inst sessions.Instance) (State, error)
	// HolderDirs are where a holder may go in the instance, in order
	// (from HolderDirs); a *CannotHold when nowhere.
	HolderDirs(ctx context.Context, inst sessions.Instance) ([]string, error)
	// Instances lists the running instances (never the gateway's own),
	// for Sweep and HeldInstances.
	Instances(ctx context.Context) ([]sessions.Instance, error)
}

// Durable configures durable sessions. The backends' Configs embed it
// and hand it to their Host as is.
type Durable struct {
	// Enabled makes Start hold new sessions in a holder program that the
	// Host copies into the instance, so they outlive the gateway, and
	// makes Adopt and HeldInstances find them. An instance that cannot host
	// the holder gets an ordinary session (a warning in the log).
	Enabled bool
	// Holder is the holder binary to copy (for held sessions and for the
	// tools, SFTP and Dial); nil means holderbin.Load() (New fails with
	// what to do when Enabled and there is none).
	Holder *holderbin.Binary
	// HolderSecret is the deployment's secret (keys.HolderSecret, from
	// the host key), required with Enabled: the holders this Host starts
	// are keyed with it, and it adopts no others (deployment.go).
	HolderSecret []byte
	// IdleTimeout and BufferSize are a held session's idle timeout and
	// replay buffer, which its holder enforces even with no gateway
	// running; zero means 30 minutes and 64 KiB.
	IdleTimeout time.Duration
	BufferSize  int

	// Toolbox says when a session or command runs in the toolbox the
	// Host copies in, a shell for instances with none (toolbox.go):
	// ToolboxAuto ("" too), ToolboxAlways or ToolboxNever. Here, not in
	// Config, so that the backends pass it on as they do the holder.
	Toolbox ToolboxMode
	// ToolboxBinary is the toolbox to copy; nil means toolboxbin.Load().
	ToolboxBinary *holderbin.Binary
}

// Config configures a Host.
type Config struct {
	Name      string // the backend, for logs ("docker")
	GatewayID string // markers become GATEWAYID.SESSION (see procmark)
	Shell     []string
	Logger    *slog.Logger
	Durable   // durable sessions and the holder binary
	// StopGrace is how long a shell killed by a signal (or a holder whose
	// connection ended) waits for its instance to be seen stopping before
	// the signal is taken for the shell's own exit status (the connection
	// for merely lost); zero means 2 s.
	StopGrace    time.Duration
	SweepWorkers int // concurrent kill execs of a Sweep; zero means 8
}

// Host runs shells and holders in a backend's instances through its
// Executor.
type Host struct {
	x         Executor
	name      string
	gatewayID string
	shell     []string
	log       *slog.Logger
	held      *heldConfig // nil unless durable
	site      *holderSite // the holder binary, for held sessions and tools
	toolbox   *toolboxSite
	stopGrace time.Duration
	workers   int
	kills     procmark.Grouper[instKey]      // one kill exec at a time per instance
	gate      atomic.Pointer[startup.Worker] // the start-up sweep (StartUp); nil before
}

var gatewayIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// New returns a Host over x.
func New(x Executor, cfg Config) (*Host, error) {
	if cfg.GatewayID != "" && !gatewayIDPattern.MatchString(cfg.GatewayID) {
		return nil, fmt.Errorf("gateway id %q: use 1 to 64 letters, digits, '_' or '-'", cfg.GatewayID)
	}
	h := &Host{
		name: cfg.Name, gatewayID: cfg.GatewayID, log: cfg.Logger,
		shell: append([]string(nil), cfg.Shell...), stopGrace: cfg.StopGrace, workers: cfg.SweepWorkers,
	}
	h.x = gatedExecutor{Executor: x, h: h}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.stopGrace <= 0 {
		h.stopGrace = 2 * time.Second
	}
	if h.workers <= 0 {
		h.workers = 8
	}
	h.kills.Run = h.runKill
	h.site = &holderSite{given: cfg.Holder}
	mode, err := ParseToolboxMode(string(cfg.Toolbox))
	if err != nil {
		return nil, err
	}
	h.toolbox = &toolboxSite{mode: mode, given: cfg.ToolboxBinary}
	if cfg.Enabled {
		held, err := newHeldConfig(cfg, h.site)
		if err != nil {
			return nil, err
		}
		h.held = held
	}
	return h, nil
}

// Log is the Host's logger.
func (h *Host) Log() *slog.Logger { return h.log }

// Where holders live: the first of HolderDirs that takes the binary and
// lets it run gets a directory .termgate (0700) holding the binary
// (holder-HASH), the socket (holder.sock), its lock and its log.
var HolderDirs = []string{"/tmp", "/var/tmp", "/run", "/"}

const holderHome = ".termgate"

// HomeIn is the holder's directory under dir.
func HomeIn(dir string) string { return path.Join(dir, holderHome) }

// SocketIn is the socket under dir of the holder of an instance's default
// session.
func SocketIn(dir string) string { return path.Join(HomeIn(dir), "holder.sock") }

// SocketFor is the socket under dir of the holder of the instance's
// session name: SocketIn for the default session (""), holder+NAME.sock
// for a named one, so that each named session has a holder of its own
// (sessions.CheckSessionName keeps NAME to [a-z0-9_-]).
func SocketFor(dir, name string) string {
	if name == "" {
		return SocketIn(dir)
	}
	return path.Join(HomeIn(dir), "holder+"+name+".sock")
}

func binaryIn(dir, hash string) string { return path.Join(HomeIn(dir), "holder-"+hash) }

// CannotHold says why an instance cannot host a holder; Start then falls
// back to an ordinary session.
type CannotHold struct {
	Why string
	// passing: for now only (another deployment's holders were in the
	// way), so the instance is not remembered as one that cannot hold.
	passing bool
}

func (e *CannotHold) Error() string { return "the instance cannot host the holder: " + e.Why }

// killTimeout bounds the cleanup the Host does on its own.
const killTimeout = 10 * time.Second

// stopping reports whether the instance stops within StopGrace. When an
// instance's main process ends, the kernel kills every process in its PID
// namespace, so an exec (or a holder) may see its shell killed by SIGKILL a
// little before the backend reports the instance stopping. It gives up
// early, reporting false, when abandon says the shell is being killed on
// purpose (nobody waits for the cause then).
func (h *Host) stopping(ctx context.Context, inst sessions.Instance, abandon func() bool) bool {
	deadline := time.Now().Add(h.stopGrace)
	for {
		if st, err := h.x.State(ctx, inst); err == nil && st != Running {
			return true
		}
		if abandon() || !time.Now().Before(deadline) {
			return false
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// exitCause is the cause for a shell that ended with code: a shell killed
// by a signal as its instance stops ended with it.
func (h *Host) exitCause(ctx context.Context, inst sessions.Instance, code int, abandon func() bool) error {
	if code >= 128 && h.stopping(ctx, inst, abandon) {
		return sessions.ErrInstanceGone
	}
	return &sessions.ExitError{Code: code}
}

// gone reports whether nothing runs in the instance any more.
func (h *Host) gone(ctx context.Context, inst sessions.Instance) bool {
	st, err := h.x.State(ctx, inst)
	return err == nil && st == Gone
}
