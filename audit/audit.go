// Package audit writes termgate's audit trail: one structured event per
// authentication success or failure, attach, detach, reset, reap, session
// end, recording served and command run in an instance, saying who (key fingerprint or token name), from
// where, which instance and session, and when. Events are JSON lines when written to
// their own file (cmd/termgate's --audit-log, by default STATE_DIR/audit.log; Reopen
// follows a rotation), or records with audit=true in the main log (--audit-log -).
//
// A nil *Log discards everything, so packages can take one optionally.
package audit

import (
	"context"
	"io"
	"log/slog"
)

// Actions, the "event" field of every record.
const (
	AuthSuccess = "auth_success"
	AuthFailure = "auth_failure"
	Attach      = "attach"
	Detach      = "detach"
	Reset       = "reset"
	Reap        = "reap"
	// Size: a session's window size pinned or unpinned (ssh HOST size,
	// the page's pin control).
	Size = "size"
	// Keep: a session kept from idle reaping (ssh HOST keep, the page).
	Keep = "keep"
	// Grant: an observer given write access for a session.
	Grant = "grant"
	// WhoIs and Hand: ssh HOST who and hand (their refusals are audited).
	WhoIs      = "who"
	Hand       = "hand"
	SessionEnd = "session_end"
	// Recording: a recording served over HTTP (GET /api/recordings/…).
	Recording = "recording"
	// OutputLog: a session's output since a person's detach read (ssh
	// HOST log INSTANCE).
	OutputLog = "log"
	// Command, Transfer and Forward: what ran beside a session (an SSH
	// command, an SFTP session or an HTTP file transfer, a forwarded
	// connection).
	Command  = "command"
	Transfer = "transfer"
	Forward  = "forward"
	// Agent: a signature asked of a client's forwarded agent (ssh -A)
	// from inside an instance.
	Agent = "agent_sign"
)

// Log is the audit trail. It also counts the command and transfer
// records it writes (counts.go), so that /metrics and the trail cannot
// disagree.
type Log struct {
	l    *slog.Logger
	c    counter
	file *file // the file Open opened (reopen.go); nil otherwise
}

// New writes audit events as JSON lines to w.
func New(w io.Writer) *Log {
	return &Log{l: slog.New(slog.NewJSONHandler(w, nil))}
}

// Into writes audit events into an existing logger, marked audit=true.
func Into(l *slog.Logger) *Log { return &Log{l: l.With("audit", true)} }

// Open appends JSON lines to path (created 0600), or, with an empty path,
// writes into fallback. The returned closer closes the file.
//
// An existing regular file must be owned by root or the gateway's user and
// be neither writable by group or others nor readable by others (0600 or
// 0640): otherwise someone else could read who logged in from where, or
// forge and erase records. It is refused with an error that says how to fix
// it. Other files (a pipe, /dev/stderr) are used as they are.
func Open(path string, fallback *slog.Logger) (*Log, io.Closer, error) {
	if path == "" {
		return Into(fallback), io.NopCloser(nil), nil
	}
	f, err := openFile(path)
	if err != nil {
		return nil, nil, err
	}
	w := &file{path: path, f: f}
	a := New(w)
	a.file = w
	return a, w, nil
}

// Who identifies the principal behind an event.
type Who struct {
	Via    string // "ssh", "http" or "websocket"
	Name   string // key comment or token name
	Key    string // key fingerprint (SSH)
	Remote string // client address
	// Login is the instance user the request ran as, when not the
	// instance's default user (CONTRACT "Named sessions and logins").
	Login string
}

func (w Who) attrs() []any {
	a := []any{"via", w.Via, "remote", w.Remote}
	if w.Name != "" {
		a = append(a, "who", w.Name)
	}
	if w.Key != "" {
		a = append(a, "key", w.Key)
	}
	if w.Login != "" {
		a = append(a, "login", w.Login)
	}
	return a
}

// Event records action by who on instance/session with extra key-value
// detail (for example "reason", "cause", "new_session").
func (a *Log) Event(action string, who Who, instance, session string, detail ...any) {
	if a == nil {
		return
	}
	a.c.count(action, detail)
	args := append([]any{"event", action}, who.attrs()...)
	if instance != "" {
		args = append(args, "instance", instance)
	}
	if session != "" {
		args = append(args, "session", session)
	}
	args = append(args, detail...)
	level := slog.LevelInfo
	if action == AuthFailure {
		level = slog.LevelWarn
	}
	a.l.Log(context.Background(), level, "audit", args...)
}
