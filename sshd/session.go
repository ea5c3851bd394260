package sshd

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// exitDetached is the status recorded when the client went away: no exit
// status is sent, the channel is just closed.
const exitDetached = -1

// session is one session channel as the middlewares and the router see it.
type session struct {
	ch     gossh.Channel // the channel itself: the relay writes to it byte for byte
	conn   *connState    // nil in unit tests
	in     *inbox        // the channel's data, pumped as it arrives
	closed chan struct{} // closed once the channel is gone
	wg     sync.WaitGroup
	grace  time.Duration
	log    *slog.Logger

	ctx    context.Context // ends with the connection
	user   string          // the instance part of the SSH user name (user.go)
	name   string          // the session's name in it ("" the default)
	raw    sshUser         // the SSH user name as sent, parsed
	remote net.Addr
	key    gossh.PublicKey // the key whose signature was verified

	// Set by the request loop before the handler starts, read-only after.
	started bool
	cmd     string      // exec's command line; "" for a shell
	subsys  string      // the subsystem asked for ("sftp"); "" for a shell or exec
	pty     *ptyRequest // nil: no PTY was requested
	win     *windowWatch
	env     []string // KEY=VALUE the client sent that envRequest accepted
	agent   bool     // the client offered its agent (auth-agent-req@openssh.com, ssh -A)

	id    keys.Identity // set by authenticate
	hasID bool

	mu     sync.Mutex // guards ended and status
	ended  bool
	status int
}

func newSession(cs *connState, ch gossh.Channel, grace time.Duration) *session {
	return &session{
		ch: ch, conn: cs, in: newInbox(), closed: make(chan struct{}), grace: grace, log: cs.log,
		ctx: cs.ctx, user: cs.target.instance, name: cs.target.name, raw: cs.target, remote: cs.remote, key: cs.verifiedKey(),
	}
}

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// goTracked runs f in a goroutine that both the server's tracker and the
// session's WaitGroup wait for.
func (s *session) goTracked(t *tracker, f func()) {
	s.wg.Add(1)
	t.Go(func() {
		defer s.wg.Done()
		f()
	})
}

// identity is what authenticate derived for the session.
func (s *session) identity() (keys.Identity, bool) { return s.id, s.hasID }

// exitStatus reports the status sent (or exitDetached), if any.
func (s *session) exitStatus() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.ended
}

// end sends code as the exit status unless one was sent (exitDetached only
// closes the channel), then waits up to the grace period for the client to
// close the channel and closes the whole connection if it did not. Once
// end returns, reads from the channel return io.EOF. It may be called more
// than once.
func (s *session) end(code int) {
	s.mu.Lock()
	first := !s.ended
	if first {
		s.ended, s.status = true, code
	}
	s.mu.Unlock()
	if first {
		if code != exitDetached {
			status := struct{ Status uint32 }{uint32(code)}
			_, _ = s.ch.SendRequest("exit-status", false, gossh.Marshal(&status))
		}
		_ = s.ch.Close()
	}
	s.waitClosed()
}

func (s *session) waitClosed() {
	if s.closed == nil {
		return
	}
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case <-s.closed:
		return
	case <-t.C:
	}
	s.log.Info("client did not close its channel; closing the connection", "grace", s.grace)
	s.closeConn()
	<-s.closed
}

// closeConn closes the session's whole SSH connection: a revoked key must
// keep nothing open, and a connection whose client stopped taking data
// frees everything it holds.
func (s *session) closeConn() {
	if s.conn != nil {
		_ = s.conn.nc.Close()
	}
}

// discardInput drops the client's data as it arrives, for sessions that
// read none.
func (s *session) discardInput() {
	if s.in != nil {
		s.in.setDiscard()
	}
}

// Write writes a command's text output (list, help, reset) to stdout.
// Under a PTY the client's terminal is in raw mode, so "\n" becomes
// "\r\n" (as a tty's onlcr would). Shell output does not come this way:
// the relay writes it to ch as it is.
func (s *session) Write(p []byte) (int, error) {
	if s.pty == nil {
		return s.ch.Write(p)
	}
	q := bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))
	q = bytes.ReplaceAll(q, []byte("\r\r\n"), []byte("\r\n"))
	if _, err := s.ch.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// stderr is the channel's stderr (extended data).
func (s *session) stderr() io.Writer { return s.ch.Stderr() }

// nl is the line end for text written outside the relay: "\r\n" when the
// client's terminal is in raw mode (it has a PTY), else "\n".
func (s *session) nl() string {
	if s.pty != nil {
		return "\r\n"
	}
	return "\n"
}

// errorf writes one message for the user on stderr.
func (s *session) errorf(msg string) {
	_, _ = io.WriteString(s.stderr(), strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", s.nl())+s.nl())
}

// ptyRequest is what a pty-req asked for.
type ptyRequest struct {
	term string
	size sessions.Size // 0x0: unknown
}

// parsePty reads a pty-req's TERM and size; the pixel sizes and the
// terminal modes that follow are not used.
func parsePty(p []byte) (ptyRequest, bool) {
	if len(p) < 4 {
		return ptyRequest{}, false
	}
	n := binary.BigEndian.Uint32(p)
	if uint64(len(p)) < 4+uint64(n)+8 {
		return ptyRequest{}, false
	}
	term, rest := string(p[4:4+n]), p[4+n:]
	cols, rows := binary.BigEndian.Uint32(rest), binary.BigEndian.Uint32(rest[4:])
	return ptyRequest{term: term, size: sessions.Size{Cols: int(cols), Rows: int(rows)}}, true
}

// windowWatch keeps a PTY session's latest window size. The request loop
// sets it without waiting on anything; follow hands the changes to the
// relay from a goroutine of its own, so that a slow resize or the warning
// about a bad size never holds up the channel's requests.
type windowWatch struct {
	mu      sync.Mutex // guards size; never held while calling out
	size    sessions.Size
	changed chan struct{} // capacity 1: set since follow last looked
}

func newWindowWatch(initial sessions.Size) *windowWatch {
	return &windowWatch{size: initial, changed: make(chan struct{}, 1)}
}

func (w *windowWatch) set(size sessions.Size) {
	w.mu.Lock()
	w.size = size
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default: // already signalled: the latest size wins
	}
}

// latest is the latest known window size.
func (w *windowWatch) latest() sessions.Size {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// follow calls f with the latest size, then after every change, until
// stop, which waits for the calls to end.
func (w *windowWatch) follow(f func(sessions.Size)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		f(w.latest())
		for {
			select {
			case <-w.changed:
				f(w.latest())
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
