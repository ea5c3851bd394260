package sessions

import (
	"errors"
	"log/slog"
	"slices"
	"time"
)

// The main log's attach and detach lines, shared by the SSH and the
// WebSocket listener so that both read the same: one info line each,
// short keys, nothing the logger's context (via, who) already says.
// The audit trail keeps the full record (whole ids, key fingerprints,
// addresses).

// LogAttached writes the one info line of an attach: the instance, the
// session (ShortID), whether the attach started it and, for an observer,
// read_only.
func LogAttached(log *slog.Logger, instance string, info AttachInfo, readOnly bool) {
	args := []any{"instance", instance, "session", ShortID(info.Session), "new", info.New}
	if readOnly {
		args = append(args, "read_only", true)
	}
	log.Info("attached", args...)
}

// LogDetached writes the one info line of a detach: how long the client
// stayed, the bytes of output it took (Client.Taken) and, unless it is a
// usual one (the client hung up, or asked to detach), why it left.
func LogDetached(log *slog.Logger, instance, session string, stayed time.Duration, out int64, cause string, usual ...string) {
	args := []any{"instance", instance, "session", ShortID(session), "after", roundStay(stayed), "out", out}
	if cause != "" && !slices.Contains(usual, cause) {
		args = append(args, "cause", cause)
	}
	log.Info("detached", args...)
}

// roundStay rounds a stay to what a reader cares about: tenths of a
// second for short ones, seconds past a minute.
func roundStay(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// logEnded writes the one info line of a session's end (the reaper's and
// the clients' own lines are debug): "session reaped" after the idle
// timeout, "session ended" with its cause (instance stopped, shell
// exited, shutdown), "session left running in its holder" for a durable
// one. A reset's end is debug: the registry's "session reset" line says
// it, with who and the new session.
func logEnded(log *slog.Logger, cause error, idle time.Duration) {
	var reset *ResetError
	switch {
	case errors.As(cause, &reset):
		log.Debug("session ended", "cause", cause.Error(), "new", ShortID(reset.NewSession))
	case errors.Is(cause, ErrIdle):
		log.Info("session reaped", "idle", idle.String())
	default:
		log.Info(endedMsg(cause), "cause", cause.Error())
	}
}
