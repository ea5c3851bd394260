package sshd

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// exitDetached is the status recorded when the client went away: no exit
// status is sent, the channel is just closed.
const exitDetached = -1

var errExited = errors.New("sshd: exit status already sent")

// session is the ssh.Session every middleware receives: gliderlabs' session
// plus the per-session logger, the exit status sent, the accepted channel
// and the window-change watcher.
type session struct {
	ssh.Session
	raw   *acceptedChannel // nil when the channel was not accepted by sessionChannel
	pty   bool
	win   *windowWatch // nil without a PTY
	grace time.Duration
	log   *slog.Logger

	mu     sync.Mutex // guards ended and status
	ended  bool
	status int
}

func newSession(gs ssh.Session, grace time.Duration) *session {
	sess := &session{Session: gs, raw: rawOf(gs), grace: grace, log: discardLogger}
	pty, _, isPty := gs.Pty()
	sess.pty = isPty
	if isPty && sess.raw != nil {
		sess.win = watchWindow(sess.raw, pty.Window)
	}
	return sess
}

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// sessOf returns the wrapper a middleware was given; a bare ssh.Session
// (a middleware used outside Server) gets a minimal one.
func sessOf(s ssh.Session) *session {
	if sess, ok := s.(*session); ok {
		return sess
	}
	return &session{Session: s, log: discardLogger}
}

// Exit sends the exit status and closes the channel, once.
func (s *session) Exit(code int) error {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return errExited
	}
	s.ended, s.status = true, code
	s.mu.Unlock()
	return s.Session.Exit(code)
}

// exitStatus reports the status sent (or exitDetached), if any.
func (s *session) exitStatus() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.ended
}

// end sends code as the exit status unless one was sent (exitDetached only
// closes the channel), waits up to the grace period for the client to close
// the channel, closes the whole connection if it did not, and stops the
// window watcher. Once end returns, reads from the channel return io.EOF.
// It may be called more than once.
func (s *session) end(code int) {
	s.mu.Lock()
	first := !s.ended
	if first {
		s.ended, s.status = true, code
	}
	s.mu.Unlock()
	if first {
		if code == exitDetached {
			_ = s.Session.Close()
		} else {
			_ = s.Session.Exit(code)
		}
	}
	s.waitClosed()
	if s.win != nil {
		s.win.stop()
	}
}

func (s *session) waitClosed() {
	if s.raw == nil {
		return
	}
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case <-s.raw.closed:
		return
	case <-t.C:
	}
	s.log.Info("client did not close its channel; closing the connection", "grace", s.grace)
	if c, ok := s.Context().Value(ssh.ContextKeyConn).(gossh.Conn); ok {
		_ = c.Close()
	}
	<-s.raw.closed
}

// discardInput drops the client's data as it arrives, for sessions that
// read none.
func (s *session) discardInput() {
	if s.raw != nil {
		s.raw.discardInput()
	}
}

// nl is the line end for text written outside the relay: "\r\n" when the
// client's terminal is in raw mode (it has a PTY), else "\n".
func (s *session) nl() string {
	if s.pty {
		return "\r\n"
	}
	return "\n"
}

// errorf writes one message for the user on stderr.
func (s *session) errorf(msg string) {
	_, _ = io.WriteString(s.Stderr(), strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", s.nl())+s.nl())
}

// windowWatch hands the client's window changes (kept by the channel
// filter, see channel.go) to the current target.
//
// Lock order: windowWatch.mu, then relay.mu, then the sessions locks.
type windowWatch struct {
	mu     sync.Mutex // guards last and target
	last   ssh.Window
	target func(ssh.Window)

	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// watchWindow starts watching ch; initial is the PTY request's size, unless
// a change came before the handler started.
func watchWindow(ch *acceptedChannel, initial ssh.Window) *windowWatch {
	w := &windowWatch{last: initial, quit: make(chan struct{}), done: make(chan struct{})}
	if win, ok := ch.window(); ok {
		w.last = win
	}
	go w.run(ch)
	return w
}

func (w *windowWatch) run(ch *acceptedChannel) {
	defer close(w.done)
	for {
		select {
		case <-ch.winSig:
			win, _ := ch.window()
			w.mu.Lock()
			w.last = win
			if w.target != nil {
				w.target(win)
			}
			w.mu.Unlock()
		case <-ch.closed:
			return
		case <-w.quit:
			return
		}
	}
}

// size is the latest known window size.
func (w *windowWatch) size() ssh.Window {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// setTarget makes f receive every later window change, and the latest size
// right away; nil stops the calls.
func (w *windowWatch) setTarget(f func(ssh.Window)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.target = f
	if f != nil {
		f(w.last)
	}
}

func (w *windowWatch) stop() {
	w.stopOnce.Do(func() { close(w.quit) })
	<-w.done
}
