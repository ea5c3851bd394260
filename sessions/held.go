package sessions

import (
	"context"
	"errors"
	"time"
)

// Durable sessions: a backend may hand the registry a shell that is held
// outside the gateway (by a holder program inside the instance), so that it
// outlives the gateway. The registry then keeps only a mirror of the
// holder's state: the holder owns the terminal, the replay ring with its
// byte offsets, the idle timer and the kill. These optional interfaces are
// how a backend offers that; a backend without them (or a Process that is
// not a HeldProcess) gets the ordinary in-gateway behaviour.

// ErrNotHeld is what Adopter.Adopt returns (wrapped) when no holder holds a
// shell in the instance: the registry then starts one with Backend.Start.
var ErrNotHeld = errors.New("no held session in the instance")

// ErrRestart is the cause a durable session's clients get when the gateway
// shuts down: the shell keeps running, and a reconnect lands in it (the
// WebSocket listener closes with 1012 "service restart").
var ErrRestart = errors.New("the gateway is restarting; the session keeps running: reconnect to return to it")

// HeldState is what a holder reports when a gateway connects to it.
type HeldState struct {
	// Session is the held session's ID (it becomes the Session's ID).
	Session string
	// Created is when the holder started the session (zero: unknown).
	Created time.Time
	// Offset is the offset of Replay's first byte: the session's byte
	// numbering continues across gateways and gateway restarts.
	Offset int64
	// Replay is the output the holder still buffers, up to the first byte
	// the process's Read returns.
	Replay []byte
	// Size is the terminal's current window size (zero: unknown).
	Size Size
	// Login is the instance user the shell runs as ("" the default
	// user): an adopted session keeps the login it was started with.
	Login string
}

// HeldProcess is a Process whose shell is held outside the gateway.
//
// Read ends with one of the registry's causes when the holder ended the
// stream for a reason of its own: a *ResetError (another gateway reset the
// session: the holder now holds NewSession), ErrIdle (the holder reaped the
// session), an *ExitError, ErrInstanceGone, ErrHolderLost (the
// connection to the holder broke while the instance runs on) or
// ErrHolderDied (the holder is gone, and the backend ended what its shell
// left behind: the session is over); the registry
// takes these as final, so the backend must tell a shell killed as its
// instance stopped (ErrInstanceGone) from one killed inside it. io.EOF or
// any other error means the connection to the holder was lost, and the
// registry watches the instance to tell which.
type HeldProcess interface {
	Process
	// Held is the holder's state as of the connection.
	Held() HeldState
	// Reset kills the shell and everything it started and has the holder
	// start a fresh shell as session id; every gateway's Read then ends
	// with a *ResetError. The registry calls it instead of Kill on reset.
	Reset(ctx context.Context, id string) error
	// Release drops the connection to the holder and leaves the shell
	// running (gateway shutdown, upgrade). The registry calls it instead of
	// Kill when the session ends with ErrRestart, or after the holder
	// itself ended the stream (a reset or a reap it did on its own).
	Release() error
	// Clients tells the holder how many clients this gateway has attached,
	// for its idle timer (which counts every gateway's clients). It must
	// not block: the registry calls it under its lock.
	Clients(n int)
}

// HeldSession is a session a holder holds: its instance and its name
// there ("" the default session).
type HeldSession struct {
	Instance Instance
	Name     string
}

// Adopter is implemented by a backend that can hold sessions. Each of an
// instance's sessions (its default one and its named ones) is held apart.
type Adopter interface {
	// Adopt connects to the session name ("" the default one) a holder
	// holds in inst. It returns an
	// error wrapping ErrNotHeld when there is none (the registry then
	// calls Start), or another error when a holder exists but cannot be
	// used now (the registry reports it and starts nothing, so that a
	// user's shell is never replaced because of a transient fault or a
	// holder of another protocol version).
	Adopt(ctx context.Context, inst Instance, name string) (HeldProcess, error)
	// HeldSessions lists the sessions holders hold, so that a starting
	// gateway can adopt them before the first attach (a session it does
	// not list is adopted at its first attach).
	HeldSessions(ctx context.Context) ([]HeldSession, error)
}
