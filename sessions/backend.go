package sessions

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/termgate/termgate/internal/agentwire"
)

// Instance is a running instance resolved by a Backend.
type Instance struct {
	// Name is the instance name the user asked for.
	Name string
	// ID identifies the instance to the backend (the container ID for Docker).
	ID string
	// Listing describes the instance in Lister's List (nil elsewhere). A
	// pointer keeps Instance comparable.
	Listing *Listing
}

// Listing is what a backend's List tells about an instance beside its name.
type Listing struct {
	Image  string
	Status string // as the backend says it ("Up 2 hours")
	// Labels holds only what the backend deems fit for every caller
	// allowed on the instance to read.
	Labels map[string]string
}

// PublicLabelPrefix marks the labels listings show (GET /api/instances,
// the page): only those the operator put under it, as
// termgate.description=… or termgate.owner=…, on a container or a pod.
// Other labels are the orchestrator's (compose, Traefik rules with
// internal host names, Helm and operator bookkeeping, and sometimes
// configuration or secrets) and are never shown.
const PublicLabelPrefix = "termgate."

// PublicLabels is the part of all a listing may show; nil when none.
func PublicLabels(all map[string]string) map[string]string {
	var out map[string]string
	for k, v := range all {
		if strings.HasPrefix(k, PublicLabelPrefix) && len(k) > len(PublicLabelPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// InstanceEvent is a change to an instance that a Backend's Watch reports.
type InstanceEvent struct {
	// Instance carries the instance's ID and, for a rename, its new name.
	Instance Instance
	// Gone: the instance stopped or was removed; its session ends. Otherwise
	// the instance was renamed: the session follows the new name and its
	// clients' authorization is checked against it.
	Gone bool
	// Reachable: no instance changed, but the backend's event source
	// connected again after it dropped (an engine restart, say), so the
	// backend is reachable again: kills that failed meanwhile are retried
	// at once rather than at their next backoff (see kill.go). Instance
	// and Gone are then unset.
	Reachable bool
	// Paused: the instance was frozen (docker pause, and docker commit,
	// which pauses): its processes neither run nor can be killed, but
	// nothing of them is lost, so its session is kept and its clients are
	// told (paused.go). Unpaused: it runs again; the session carries on
	// and kills that failed meanwhile are retried at once.
	Paused, Unpaused bool
}

// StartSpec describes the shell a Backend starts for a session.
type StartSpec struct {
	// SessionID marks every process of the session (the backend puts it in
	// the shell's environment as TERMGATE_SESSION) so that Kill and Sweep can
	// find them.
	SessionID string
	// Name is the session's name in its instance ("" the default
	// session): a backend that holds sessions keeps each name's apart.
	Name string
	// Login is the instance's user the shell runs as (a name in its
	// /etc/passwd or a numeric uid, checked by keys.DecideLogin); "" the
	// instance's default user. A backend that cannot become it refuses
	// with a *LoginError and starts nothing.
	Login string
	// Shell is the command to run; empty means "bash if present, else sh".
	Shell []string
	// Term is the TERM value for the shell.
	Term string
	// Env are more variables (NAME=VALUE) for the shell, from the client
	// that started it; Term and the marker win over them.
	Env []string
	// Size is the initial window size (always valid).
	Size Size
	// Agent asks for the session's agent socket: the shell's
	// SSH_AUTH_SOCK names AgentSocket(SessionID) (the attach that starts
	// it forwards an agent, ssh -A; a reset keeps it).
	Agent bool
}

// LoginError: the shell cannot run as the login asked for (no such user
// in the instance, or an instance that cannot change user): Why is the
// sentence the user reads.
type LoginError struct{ Login, Why string }

func (e *LoginError) Error() string { return e.Why }

// NoShellError: the instance has no shell the gateway can start (no
// /bin/sh, and termgate's toolbox cannot run there): Why is the sentence
// the user reads, saying what to change.
type NoShellError struct{ Why string }

func (e *NoShellError) Error() string { return e.Why }

// ToolboxProcess is a Process that may run termgate's toolbox (a shell
// the gateway brought into an instance that has none): Info says so.
type ToolboxProcess interface{ Toolbox() bool }

// AgentSocket is where a session's forwarded agent listens inside its
// instance: fixed by the session id, so that the shell's SSH_AUTH_SOCK,
// set when it starts, stays right for the session's life whichever client
// answers behind it (sshd/agent.go).
func AgentSocket(sessionID string) string { return agentwire.Socket(sessionID) }

// Process is one running shell with its terminal. Read and Write may be
// called concurrently with each other and with Resize; Write may be called
// from several goroutines.
type Process interface {
	// Read returns terminal output, and ends with the cause: an
	// *ExitError (the shell exited by itself), ErrInstanceGone (it ended
	// because its instance stopped), or another of the registry's causes;
	// a bare io.EOF (after Kill, or when the backend cannot tell) is
	// ErrBackendLost.
	io.Reader
	// Write sends input to the shell's terminal.
	io.Writer
	// Resize changes the terminal's window size.
	Resize(ctx context.Context, size Size) error
	// Wait returns the shell's exit code; call it after Read ended.
	Wait(ctx context.Context) (int, error)
	// Kill ends the shell and every process it started in the instance,
	// background jobs included, then releases the terminal stream.
	Kill(ctx context.Context) error
}

// Backend is what sessions needs from an instance provider (Docker, local
// PTYs, a fake in unit tests).
type Backend interface {
	// Lookup resolves a running instance by name. It returns an error
	// wrapping ErrNotFound when the instance does not exist, is not running,
	// or may not be used (the gateway's own container, a missing label),
	// and one wrapping ErrPaused when it is paused.
	Lookup(ctx context.Context, name string) (Instance, error)
	// Start starts a shell in the instance.
	Start(ctx context.Context, inst Instance, spec StartSpec) (Process, error)
	// Watch reports every instance that stops, is removed, is renamed,
	// is paused or is unpaused, until ctx is done. It reconnects by itself when the backend's event
	// source drops, and should then report an event with Reachable set.
	// ev runs on Watch's goroutine.
	Watch(ctx context.Context, ev func(InstanceEvent)) error
	// Sweep ends the shells an earlier run of the gateway left behind.
	Sweep(ctx context.Context) error
	// Ping reports whether the backend is reachable.
	Ping(ctx context.Context) error
}

// Size is a terminal window size in character cells.
type Size struct {
	Cols, Rows int
}

// MaxDim is the largest accepted number of columns or rows.
const MaxDim = 1000

// String is "COLSxROWS", as ssh HOST size and recordings write it.
func (s Size) String() string { return strconv.Itoa(s.Cols) + "x" + strconv.Itoa(s.Rows) }

// IsZero reports whether the size is unknown (what ssh -tt sends).
func (s Size) IsZero() bool { return s.Cols == 0 && s.Rows == 0 }

// Valid reports whether both dimensions are within 1..MaxDim.
func (s Size) Valid() bool {
	return s.Cols >= 1 && s.Cols <= MaxDim && s.Rows >= 1 && s.Rows <= MaxDim
}

// DefaultSize is the size of a new session whose first client did not say.
var DefaultSize = Size{Cols: 80, Rows: 24}
