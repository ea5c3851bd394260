package sessions

import (
	"errors"
	"fmt"

	"github.com/termgate/termgate/internal/names"
)

// Sentinels that the listeners translate into the contract's messages.
var (
	// ErrNotFound: the instance does not exist, is not running or may not be
	// used. Backends wrap it.
	ErrNotFound = errors.New("not found or not running")
	// ErrBadName: the instance name is outside the contract's syntax.
	ErrBadName = errors.New("invalid instance name")
	// ErrBadSize: a window size outside 1..MaxDim.
	ErrBadSize = errors.New("window size out of range")
	// ErrClosed: the registry is shutting down.
	ErrClosed = errors.New("gateway is shutting down")

	// Causes a client's Take returns when its session ends under it.
	ErrIdle         = errors.New("session ended after its idle timeout")
	ErrSlowClient   = errors.New("client fell too far behind the output and was disconnected; reattach to get the replay")
	ErrInstanceGone = errors.New("instance stopped; session ended")
	ErrShutdown     = errors.New("gateway is shutting down; session ended")
	ErrBackendLost  = errors.New("lost the connection to the instance; session ended")
	ErrDetached     = errors.New("detached")

	// ErrInputStalled is what Client.Write returns when the shell has not
	// taken input for Config.InputTimeout: the bytes not yet written are
	// dropped, so the listener can go back to reading its connection.
	ErrInputStalled = errors.New("the shell is not reading its input; input dropped")
	// ErrReadOnly refuses an observer's input (and its resets, in the
	// listeners).
	ErrReadOnly = errors.New("read-only access: input is not sent to the shell")
	// ErrPreviousShellAlive refuses a new shell while the processes of the
	// instance's previous session could not be killed yet (the engine is
	// unreachable, say); the kill is retried until it succeeds.
	ErrPreviousShellAlive = errors.New("the previous shell's processes are still being ended (the instance's engine does not answer); try again shortly")
)

// CheckName refuses names outside the contract's syntax (internal/names)
// before any backend call.
func CheckName(name string) error {
	if !names.Valid(name) {
		return fmt.Errorf("%w %q: use letters, digits, '.', '_' and '-' (at most 128, starting with a letter or digit)", ErrBadName, truncate(name, 64))
	}
	return nil
}

// NotFoundMessage is the contract's user-facing text for ErrNotFound.
func NotFoundMessage(name string) string {
	return fmt.Sprintf("instance %q not found or not running", name)
}

// ResetError says a session was reset. An attached client gets it once,
// as an in-band Event from Take, when the registry has moved it to session
// NewSession (Attach says where it landed); it stays attached. A session
// that ended by a reset has it as its cause (Config.OnEnd): hence an error.
type ResetError struct {
	OldSession, NewSession string
	By                     string
	// Attach is where the moved client landed (zero in a session's cause).
	Attach AttachInfo
}

func (e *ResetError) Error() string {
	if e.By != "" {
		return fmt.Sprintf("session reset by %s; a fresh shell was started", e.By)
	}
	return "session reset; a fresh shell was started"
}

// RevokedError is the cause a client sees when its credentials no longer
// allow the instance (a key or token removed, a limit narrowed, the instance
// renamed out of its reach): it is disconnected and never follows a reset.
type RevokedError struct {
	Reason string
}

func (e *RevokedError) Error() string {
	if e.Reason == "" {
		return "access revoked; disconnected"
	}
	return "access revoked: " + e.Reason + "; disconnected"
}

// ReplayTooLargeError refuses an attach whose replay is larger than a
// client's queue (Config.ClientQueue): the client would be dropped as too
// slow at once. The screen replayer bounds its snapshot so that this does
// not happen; a raw replay is never larger than the buffer.
type ReplayTooLargeError struct {
	Replay, Queue int
}

func (e *ReplayTooLargeError) Error() string {
	return fmt.Sprintf("the session's replay (%d bytes) is larger than a client may queue (%d bytes); attach with a smaller window, or reset the session", e.Replay, e.Queue)
}

// ExitError is the cause a client sees when the shell exited by itself.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("shell exited with status %d", e.Code) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
