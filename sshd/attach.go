package sshd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// attach joins the session at name (INSTANCE or INSTANCE+NAME) and relays until the shell exits, the
// session ends under the client or the client goes away. It returns the
// exit status to send (exitDetached when the client went away).
func (s *Server) attach(sess *session, id keys.Identity, name string) int {
	acc, ok := s.decide(sess, id, name, audit.Attach, keys.Terminal)
	if !ok {
		return 1
	}
	login, ok := s.login(sess, id, acc, name, audit.Attach)
	if !ok {
		return 1
	}
	// Output goes to the channel byte for byte: sess.Write would turn
	// "\n" into "\r\n", which breaks full-screen programs in raw mode.
	r := &relay{srv: s, sess: sess, reg: s.cfg.Registry, name: name, out: sess.ch, who: who(id, sess.remote)}
	r.who.Login = login
	var size sessions.Size
	term := ""
	if sess.pty != nil {
		term = sess.pty.term
		size = sess.win.latest() // a change may have come before the handler ran
	}
	if !size.IsZero() && !size.Valid() {
		r.warnSize(size)
		size = sessions.Size{}
	}
	r.size = size
	agent := s.agentAllowed(sess, acc)
	r.opts = sessions.AttachOptions{Agent: agent, Term: term, Label: "ssh " + sess.remote.String(),
		Allowed: s.stillAllowed(sess, sess.key),
		Who:     id.Name, Via: "ssh", Remote: sess.remote.String(), ReadOnly: !acc.Write, Login: login,
		Prefetch: sess.conn.prefetched(),
		Env:      shellEnv(sess.env)}
	c, err := r.attach(sess.ctx)
	if err != nil {
		if sess.ctx.Err() != nil {
			return exitDetached
		}
		inst, detail := sessions.AuditAddr(name, "result", "failed", "reason", err.Error())
		s.cfg.Audit.Event(audit.Attach, r.who, inst, "", detail...)
		if isRevoked(err) {
			_ = r.notice(sess.stderr(), err.Error())
			sess.end(1)
			sess.closeConn()
			return 1
		}
		if errors.Is(err, sessions.ErrNotFound) {
			inst, _, _ := strings.Cut(name, "+")
			sess.errorf(notFound(inst, audit.Attach))
			return 1
		}
		sess.errorf(s.userError(sess, "attach to", name, err))
		return 1
	}
	r.client = c
	defer watchCertExpiry(sess, c)() // a certificate's end disconnects, as a revocation
	r.attached = time.Now()
	sessions.LogAttached(sess.log, name, c.Info(), !acc.Write)
	inst, detail := sessions.AuditAddr(name, "result", "ok", "new", c.Info().New, "read_only", !acc.Write)
	s.cfg.Audit.Event(audit.Attach, r.who, inst, c.Info().Session, detail...)
	if agent {
		r.agentJoin()
		defer r.agentLeave()
	}
	code := r.run()
	if r.revoked {
		// The key lost its access: the whole connection goes, after the
		// notice and the exit status (run ended the channel).
		sess.closeConn()
	}
	return code
}

// relay moves bytes between one SSH channel and a sessions.Client (which
// sessions moves to the new session after a reset).
type relay struct {
	srv  *Server
	sess *session
	reg  *sessions.Registry
	name string
	out  io.Writer // the channel's stdout
	opts sessions.AttachOptions
	who  audit.Who // the client, for the audit trail

	mu     sync.Mutex // guards the fields below; taken before the sessions locks
	client *sessions.Client
	size   sessions.Size // the client's latest valid window size; zero if unknown
	warned bool          // a bad window size was reported

	revoked bool        // the key lost its access; owned by the output pump until run returns
	escaped atomic.Bool // the client typed ~. (escape.go): a detach it asked for
	// Without a terminal, the input's EOF detaches (inputeof.go):
	// eofDetached says it did; lastOut is when output was last written
	// (UnixNano), for the wait for the output to settle.
	eofDetached atomic.Bool
	lastOut     atomic.Int64
	guard       writeGuard // the writes to the channel in progress, for watch

	attached time.Time // when the attach succeeded, for the detach line

	// agentStop ends this client's answering for its session's agent
	// socket (agent_use.go); nil when it does not. The attach's goroutine
	// (which runs the output pump) owns it.
	agentStop func()
}

func (r *relay) attach(ctx context.Context) (*sessions.Client, error) {
	r.mu.Lock()
	opts := r.opts
	opts.Size = r.size
	r.mu.Unlock()
	return r.reg.Attach(ctx, r.name, opts)
}

func (r *relay) current() *sessions.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.client
}

// run hands the client's input to the session, starts the channel watcher,
// runs the output pump, and stops and waits for all of it before it
// returns, panics included. An attached client costs the goroutine that
// runs run and the channel watcher: the input goes from the channel's pump
// (see input) and the write guard's watcher starts only once the client is
// closed (AfterClose).
func (r *relay) run() (code int) {
	code = 1 // if the output pump panics
	stopInput := r.input()
	stopGuard, guardDone := make(chan struct{}), make(chan struct{})
	c0 := r.current()
	c0.AfterClose(func() {
		defer close(guardDone)
		r.watchClosed(stopGuard, c0, r.srv.cfg.CloseGrace)
	})
	stopWatch, watchDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-r.sess.closed:
			r.channelClosed()
		case <-stopWatch:
		}
	}()
	stopResize := func() {}
	if r.sess.win != nil {
		stopResize = r.sess.win.follow(r.resize)
	}
	r.lastOut.Store(time.Now().UnixNano())
	stopEOF, eofDone := make(chan struct{}), make(chan struct{})
	if r.sess.pty == nil && r.sess.in != nil {
		eof := make(chan struct{})
		r.sess.in.notifyEOF(func() { close(eof) }) // called once at most
		go func() {
			defer close(eofDone)
			r.detachAtEOF(eof, stopEOF)
		}()
	} else {
		close(eofDone)
	}
	cause := "panic"
	defer func() {
		close(stopEOF)
		<-eofDone
		stopResize()
		close(stopWatch)
		<-watchDone
		c := r.current()
		c.Detach() // no-op unless the shell is still running
		// end writes the exit status: watched like every other write.
		_ = r.guard.do(func() error { r.sess.end(code); return nil }) // after it, the channel reads io.EOF
		stopInput()
		close(stopGuard)
		if c.Cause() != nil { // closed (Detach above closes a live one): the watcher was started
			<-guardDone
		}
		inst, detail := sessions.AuditAddr(r.name, "cause", cause)
		r.srv.cfg.Audit.Event(audit.Detach, r.who, inst, c.Info().Session, detail...)
		sessions.LogDetached(r.sess.log, r.name, c.Info().Session, time.Since(r.attached), c.Taken(), cause, clientLeft, escapeDetached)
	}()
	code, cause = r.output()
	return code
}

// The usual causes of a detach: the client hung up, or typed ~.
const (
	clientLeft     = "client closed the channel"
	escapeDetached = "detached with ~."
)

// output copies the session's output to the channel until the session ends
// for this client, and returns the exit status to send and, for the audit
// trail, why the client left. In-band events go to relayEvents (events.go).
func (r *relay) output() (code int, cause string) {
	var bufs [][]byte
	events := &relayEvents{r: r}
	for {
		c := r.current()
		<-c.Ready() // also when the client is closed
		var ev sessions.Event
		var err error
		bufs, ev, err = c.Take(bufs[:0])
		if len(bufs) > 0 {
			// What was queued goes as one channel write (relaybuf), from
			// this goroutine: no copy into a buffer, no hand-off.
			werr := r.writeOutput(bufs, &events.skipped)
			r.lastOut.Store(time.Now().UnixNano())
			clear(bufs) // hold no output once it is written
			if werr != nil {
				if cause := c.Cause(); cause != nil && !errors.Is(cause, sessions.ErrDetached) {
					return exitDetached, cause.Error() // e.g. dropped as too slow, then cut off
				}
				return exitDetached, clientLeft
			}
		}
		if ev != nil {
			if ev.Handle(events) != nil {
				return exitDetached, clientLeft
			}
			continue
		}
		if err != nil {
			return r.ended(err)
		}
	}
}

// ended returns the exit status to send and the audit cause for the end
// of the client's output, and tells the user why where they would not
// know.
func (r *relay) ended(err error) (code int, cause string) {
	var exit *sessions.ExitError
	switch {
	case isRevoked(err):
		r.revoked = true
		r.sess.log.Debug("disconnected: access revoked", "instance", r.name, "cause", err.Error())
		_ = r.notice(r.sess.stderr(), err.Error())
		return 1, err.Error()
	case errors.As(err, &exit):
		r.sess.log.Debug("shell exited", "instance", r.name, "status", exit.Code)
		return exit.Code, fmt.Sprintf("shell exited with status %d", exit.Code)
	case errors.Is(err, sessions.ErrDetached) && r.escaped.Load():
		return 0, escapeDetached
	case errors.Is(err, sessions.ErrDetached) && r.eofDetached.Load():
		return 0, inputEnded
	case errors.Is(err, sessions.ErrDetached):
		return exitDetached, clientLeft
	default: // instance stopped, too slow, shutting down, backend lost, idle
		r.sess.log.Debug("session ended under the client", "instance", r.name, "cause", err.Error())
		_ = r.notice(r.sess.stderr(), err.Error())
		return 1, err.Error()
	}
}

// resetNotice logs and audits the move to the fresh session after a reset
// and tells the user, between the old shell's output and the new one's:
// keys typed meanwhile went to the new shell.
func (r *relay) resetNotice(reset *sessions.ResetError) error {
	r.sess.log.Debug("moved to the new session after a reset", "instance", r.name, "session", reset.Attach.Session)
	inst, detail := sessions.AuditAddr(r.name, "result", "ok", "new", false, "after_reset", true)
	r.srv.cfg.Audit.Event(audit.Attach, r.who, inst, reset.Attach.Session, detail...)
	if r.agentStop != nil {
		r.agentJoin() // the fresh session's socket is another
	}
	msg := "session reset: fresh shell"
	if reset.By != "" {
		msg = "session reset by " + reset.By + ": fresh shell"
	}
	return r.notice(r.out, msg)
}

// escapeDetach detaches the client that typed ~. (escape.go): it is told,
// and gets exit status 0 as the channel closes; the shell keeps running.
func (r *relay) escapeDetach() {
	if r.escaped.Swap(true) {
		return
	}
	r.sess.log.Debug("detached with ~.", "instance", r.name)
	_ = r.notice(r.sess.stderr(), "detached; the shell keeps running ("+r.srv.comeBack(r.sess, r.name)+" to come back)")
	r.current().Detach()
}

// channelClosed detaches the client when the SSH channel closes, which
// ends the output pump; the shell keeps running.
func (r *relay) channelClosed() {
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	c.Detach()
}

// resize applies a window change from the client (called by windowWatch).
func (r *relay) resize(size sessions.Size) {
	if size.IsZero() {
		return
	}
	if !size.Valid() {
		r.warnSize(size)
		return
	}
	r.mu.Lock()
	r.size = size
	c := r.client
	r.mu.Unlock()
	_ = c.Resize(size) // only fails for invalid sizes
}

// warnSize tells the user, once, that a window size was out of range.
func (r *relay) warnSize(size sessions.Size) {
	r.mu.Lock()
	warned := r.warned
	r.warned = true
	r.mu.Unlock()
	if warned {
		return
	}
	r.sess.log.Debug("window size out of range", "cols", size.Cols, "rows", size.Rows)
	r.sess.errorf(fmt.Sprintf("termgate: window size %dx%d is outside 1..%d; keeping the session's size",
		size.Cols, size.Rows, sessions.MaxDim))
}

// notice writes a one-line notice into the terminal stream.
func (r *relay) notice(w io.Writer, msg string) error {
	return r.guard.do(func() error {
		_, err := io.WriteString(w, "\r\n[termgate] "+msg+"\r\n")
		return err
	})
}
