package remote

import (
	"context"
	"errors"
	"io"

	"github.com/termgate/termgate/sessions"
)

// Command is a one-off process to run in an instance (ssh INSTANCE@HOST
// CMD...).
type Command struct {
	// Line is the command line as the client sent it: the instance's
	// /bin/sh -c gets it, as OpenSSH gives it to the login shell; an
	// instance without /bin/sh gets its words run directly.
	Line string
	// TTY gives the process a terminal of its own, of Size (zero: 80x24)
	// and Term.
	TTY  bool
	Size sessions.Size
	Term string
	// Env is KEY=VALUE for the process (the listener filtered it).
	Env []string
	// Login is the instance's user the process runs as ("" its default
	// user): see sessions.StartSpec.Login.
	Login string
	// Stderr receives the process's stderr (without a TTY; nil
	// discards it).
	Stderr io.Writer
}

// Exit is how a process ended: its exit status, or the signal that killed
// it when the backend knows (Signal is then its name without "SIG", as
// SSH's exit-signal wants: "KILL").
type Exit struct {
	Code   int
	Signal string
}

// Process is a started command.
type Process interface {
	io.Reader // stdout (with a TTY, the terminal)
	io.Writer // stdin
	// CloseWrite ends the process's stdin (the client sent EOF).
	CloseWrite() error
	Resize(ctx context.Context, size sessions.Size) error
	// Wait returns how the process ended, once its output was read to
	// its end.
	Wait(ctx context.Context) (Exit, error)
	// Close ends the process and everything it started, if still
	// running, and drops the stream. It is idempotent and waits for the
	// kill.
	Close() error
}

// Conn is a byte stream into an instance: an SFTP server's, or a
// forwarded TCP connection's.
type Conn interface {
	io.ReadWriteCloser
	// CloseWrite ends what the gateway sends (the peer reads EOF) and
	// leaves the other direction open.
	CloseWrite() error
}

// Runner is what a backend offers besides sessions. Every method takes an
// instance resolved by the registry's Lookup (so never the gateway's own
// container).
type Runner interface {
	// Run starts a one-off command.
	Run(ctx context.Context, inst sessions.Instance, cmd Command) (Process, error)
	// SFTP starts an SFTP server in the instance, as the user its shell
	// runs as, and returns its stream (the SFTP protocol, version 3).
	SFTP(ctx context.Context, inst sessions.Instance, opts SFTPOptions) (Conn, error)
	// Dial connects to host:port from inside the instance's network
	// namespace.
	Dial(ctx context.Context, inst sessions.Instance, host string, port int) (Conn, error)
}

// SFTPOptions are how an SFTP server starts.
type SFTPOptions struct {
	// CwdOf, when not empty, is a session id: the server starts in the
	// working directory of that session's shell (its relative paths and
	// its RealPath(".") are that directory's), found in the instance's
	// /proc. A shell that cannot be found, or whose directory cannot be
	// read, leaves the server in its usual start directory (the user's
	// home): a best effort, never a reason to fail the transfer. Servers
	// that cannot look (an image's own sftp-server) ignore it.
	CwdOf string
	// ReadOnly serves reads and refuses every write (a download-only
	// credential: files="download"). Servers that cannot refuse writes
	// must not be used for it.
	ReadOnly bool
	// Login is the instance's user the server runs as, from that user's
	// home ("" the default user); a backend that cannot refuses with a
	// *sessions.LoginError.
	Login string
}

// ErrUnsupported: this backend cannot do what was asked.
var ErrUnsupported = errors.New("not supported by this backend")

// Unavailable says why an instance cannot do what was asked (no holder can
// run there and the instance has no sftp-server of its own, say): what the
// user reads.
type Unavailable struct{ Why string }

func (e *Unavailable) Error() string { return e.Why }

// Agent is what a backend that can forward agents (ssh -A) offers besides
// a Runner: it serves the agent socket of session id
// (sessions.AgentSocket(id)) inside the instance and returns the stream of
// its requests and replies (internal/agentwire), the socket and its
// directory owned by login, the instance's user the session or command
// runs as ("" its default user). Close ends the socket.
type Agent interface {
	Agent(ctx context.Context, inst sessions.Instance, id, login string) (Conn, error)
}
