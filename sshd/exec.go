package sshd

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// gatewayUser is the user name that always means the gateway itself
// (ssh termgate@HOST list), never an instance.
const gatewayUser = "termgate"

// commandTimeout bounds the lookup, the start and, once the output ended,
// the wait for the exit status of a command.
const commandTimeout = 30 * time.Second

// instanceCommand says whether the session's command line runs in the
// instance its user name names (contract "SSH"): when the user name is an
// instance this key may reach, every command line but a bare reset does;
// otherwise (the client's login name, termgate, a stopped instance) the
// line is one of the gateway's own. inst is the instance found; err a
// lookup failure that is not "there is none" (a backend down, a paused
// instance), for runCommand to report. A key's instances= refusal and a
// missing instance read the same: the key learns nothing.
func (s *Server) instanceCommand(sess *session, id keys.Identity) (inst sessions.Instance, run bool, err error) {
	f := strings.Fields(sess.cmd)
	user := sess.user
	if len(f) == 0 || len(f) == 1 && f[0] == "reset" || user == gatewayUser ||
		sessions.CheckName(user) != nil || !id.May(user) {
		return sessions.Instance{}, false, nil
	}
	ctx, cancel := context.WithTimeout(sess.ctx, commandTimeout)
	defer cancel()
	inst, err = s.cfg.Registry.Lookup(ctx, user)
	if errors.Is(err, sessions.ErrNotFound) || errors.Is(err, sessions.ErrBadName) {
		return sessions.Instance{}, false, nil
	}
	if err != nil && !errors.Is(err, sessions.ErrPaused) && isGatewayCommand(sess.cmd) {
		// The backend cannot say whether the user name is an instance
		// (the engine is down): the user name is then most often the
		// client's login (ssh HOST instances as root), and a line that is
		// one of the gateway's own commands is the gateway's. Those that
		// need the backend say themselves that it is unreachable.
		sess.log.Debug("instance lookup failed; running the gateway's command", "user", clip(user, 128), "err", err)
		return sessions.Instance{}, false, nil
	}
	return inst, true, err
}

// isGatewayCommand says whether line parses as one of the gateway's own
// commands.
func isGatewayCommand(line string) bool {
	_, err := parseCommand(line)
	return err == nil
}

// runCommand runs the session's command line in the instance name and
// relays it: the channel's data is its stdin (the client's EOF ends that,
// and only that), its stdout goes to the channel, its stderr as extended
// data; a closed channel kills it and everything it started. It returns
// the exit status to send (exitDetached when the client went away).
func (s *Server) runCommand(sess *session, id keys.Identity, name string, inst sessions.Instance, lookupErr error) int {
	line := sess.cmd
	w := who(id, sess.remote)
	deny := func(reason, msg string) int {
		sess.log.Warn("command refused", "instance", name, "reason", reason)
		sess.errorf(msg)
		s.cfg.Audit.Event(audit.Command, w, name, "", "argv", clip(line, 1024), "result", "denied", "reason", reason)
		return 1
	}
	acc, ok := s.decide(sess, id, name, audit.Command, keys.Command, "argv", clip(line, 1024))
	if !ok {
		return 1
	}
	login, ok := s.login(sess, id, acc, name, audit.Command, "argv", clip(line, 1024))
	if !ok {
		return 1
	}
	w.Login = login
	if s.cfg.Remote == nil {
		return deny("backend runs no commands", "termgate: this gateway's backend cannot run commands in instances")
	}
	tty := sess.pty != nil
	if tty && acc.Decide(keys.Terminal) != nil {
		// As OpenSSH's sshd does for a no-pty key: the command runs,
		// without a terminal.
		tty = false
		sess.errorf("termgate: this key may not open terminals (no-pty); running the command without one")
	}
	ctx, cancel := context.WithTimeout(sess.ctx, commandTimeout)
	cut := &commandCut{srv: s, cancel: cancel}
	op, refused := s.beginRemote(sess.conn, opCommand, name, cut.cut)
	if refused != "" {
		cancel()
		return deny("over the cap", refused)
	}
	defer op.end()
	if err := lookupErr; err != nil {
		cancel()
		if why := cut.reason(); why != "" {
			return s.commandRevoked(sess, w, name, line, why)
		}
		return s.commandFailed(sess, w, name, line, err)
	}
	rc := remote.Command{Line: line, TTY: tty, Env: append([]string(nil), sess.env...), Login: login}
	if s.agentAllowed(sess, acc) { // ssh -A: a socket of its own, answered by this client only
		sock, stop, err := s.agents.forCommand(sess.ctx, inst, login, &agentSource{conn: sess.conn.sshConn, who: w})
		if err != nil {
			sess.log.Warn("agent forwarding: could not start the command's agent socket; it runs without one", "instance", name, "err", err)
		} else {
			defer stop()
			rc.Env = append(rc.Env, "SSH_AUTH_SOCK="+sock)
		}
	}
	if tty {
		rc.Term, rc.Size = sess.pty.term, sess.win.latest()
		if !rc.Size.Valid() {
			rc.Size = sessions.Size{} // the default size; a bad one is not worth failing for
		}
	} else {
		rc.Stderr = sess.ch.Stderr()
	}
	p, err := s.cfg.Remote.Run(ctx, inst, rc)
	cancel()
	if err == nil && !cut.started(p) {
		_ = p.Close()
		err = errors.New("revoked while starting")
	}
	if why := cut.reason(); why != "" {
		return s.commandRevoked(sess, w, name, line, why)
	}
	if err != nil {
		return s.commandFailed(sess, w, name, line, err)
	}
	sess.log.Debug("command started", "instance", name, "tty", tty)
	code, sig, finish := s.relayCommand(sess, p, tty)
	// The client has its exit status before the kill exec for what the
	// command left running: `ssh I@HOST true` costs it no second exec.
	// That sweep may wait a second to share its exec (exechost): the
	// command's slot under the caps is given back first, so that a
	// script's back-to-back commands do not pile up against
	// MaxRemotePerKey meanwhile (the channel's own slots are the
	// channel's, free once it closed).
	defer func() {
		op.end()
		finish()
	}()
	if why := cut.reason(); why != "" {
		return s.commandRevoked(sess, w, name, line, why)
	}
	if killedOrBroken(code, sig) && s.instanceGone(sess.ctx, name) {
		// Killed with its instance (docker stop, a deleted pod): say so,
		// as the shell's notice does, rather than a bare 137.
		sess.log.Info("command ended: "+whyInstanceGone, "who", clip(w.Name, 128), "key", w.Key, "instance", clip(name, 128))
		sess.errorf(endedNotice(whyInstanceGone, "command"))
	}
	result := []any{"argv", clip(line, 1024), "result", "ok", "exit_code", code}
	if sig != "" {
		result = append(result, "signal", sig)
	}
	if code == exitDetached {
		result = append(result[:4], "cause", "client closed the channel")
	}
	s.cfg.Audit.Event(audit.Command, w, name, "", result...)
	// The slot is free before the client has its status: a client that
	// opens its next command's channel at once on the same connection
	// (ControlMaster) must find it free (op.end is idempotent).
	op.end()
	if sig != "" {
		sendExitSignal(sess, sig)
		code = exitDetached // the exit-signal is the status
	}
	sess.end(code)
	return code
}

// relayCommand moves the bytes until the command's output ended and
// returns the exit code and signal, or exitDetached when the channel
// closed first. finish ends the command (Close: what it left running dies
// too) and waits for every goroutine relayCommand started; the caller
// calls it once it sent the status.
func (s *Server) relayCommand(sess *session, p remote.Process, tty bool) (code int, signal string, finish func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	// The channel closed: the client went away, so the command ends.
	wg.Go(func() {
		select {
		case <-sess.closed:
			_ = p.Close()
		case <-done:
		}
	})
	// stdin: the inbox ends with io.EOF on the client's EOF (or once it
	// discards, when the command is over).
	wg.Go(func() {
		if _, err := io.Copy(p, sess.in); err == nil {
			_ = p.CloseWrite()
		}
	})
	stopResize := func() {}
	if tty && sess.win != nil {
		stopResize = sess.win.follow(func(size sessions.Size) {
			if size.Valid() {
				_ = p.Resize(sess.ctx, size)
			}
		})
	}
	// Output goes to the channel byte for byte (sess.Write would turn
	// "\n" into "\r\n").
	out := &readErr{r: p}
	_, werr := io.Copy(sess.ch, out)
	code = exitDetached
	select {
	case <-sess.closed:
	default:
		if out.err != nil { // the stream broke, not the channel
			sess.log.Warn("the command's output stream broke", "err", out.err)
			sess.errorf("termgate: the connection to the command broke; the gateway log has the details")
			code = 255
		} else if werr == nil {
			ctx, cancel := context.WithTimeout(sess.ctx, commandTimeout)
			exit, err := p.Wait(ctx)
			cancel()
			if err != nil {
				sess.log.Warn("no exit status for the command", "err", err)
				sess.errorf("termgate: the command's exit status is unknown; the gateway log has the details")
				code = 255
			} else {
				code, signal = exit.Code, exit.Signal
			}
		}
	}
	stopResize()
	return code, signal, func() {
		if err := p.Close(); err != nil {
			sess.log.Warn("ending the command's processes failed", "err", err)
		}
		close(done)
		sess.discardInput() // ends the stdin copy
		wg.Wait()
	}
}

// killedOrBroken tells a command's end that its instance's stop may
// explain: a signal, a shell's 128+signal status, or the gateway's 255
// for a broken stream (an ordinary exit, or the client's detach, is not).
func killedOrBroken(code int, sig string) bool {
	return sig != "" || code == 255 || code > 128
}

// commandCut is how Recheck ends a command whose key lost its access: it
// kills the process (on a goroutine of the server's tracker: the kill is
// I/O, which Recheck must not wait for), or cancels its start; the
// session's goroutine then tells the user and ends the connection, as for
// an attached client.
type commandCut struct {
	srv    *Server
	cancel context.CancelFunc

	mu  sync.Mutex // guards the fields below; held for no I/O
	why string
	p   remote.Process
}

func (c *commandCut) cut(why string) {
	c.mu.Lock()
	first := c.why == ""
	if first {
		c.why = why
	}
	p := c.p
	c.mu.Unlock()
	if !first {
		return
	}
	c.cancel()
	if p != nil {
		c.srv.track.Go(func() { _ = p.Close() })
	}
}

// started records p; false when the command was cut meanwhile (the caller
// closes p).
func (c *commandCut) started(p remote.Process) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p = p
	return c.why == ""
}

func (c *commandCut) reason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why
}

// commandRevoked tells the user a command was cut by a revocation, audits
// it, and closes the connection (a revoked key keeps nothing open); or,
// cut by the shutdown, tells the user and ends the channel.
func (s *Server) commandRevoked(sess *session, w audit.Who, name, line, why string) int {
	if why == whyShutdown { // not a revocation: the client is told, the connection ends with the gateway
		sess.log.Info("command ended: "+why, "who", clip(w.Name, 128), "key", w.Key, "instance", clip(name, 128))
		sess.errorf(endedNotice(why, "command"))
		s.cfg.Audit.Event(audit.Command, w, name, "", "argv", clip(line, 1024), "result", "cut", "reason", why)
		sess.end(1)
		return 1
	}
	sess.log.Info("command cut: access revoked", "instance", name, "cause", why)
	sess.errorf("termgate: " + why)
	s.cfg.Audit.Event(audit.Command, w, name, "", "argv", clip(line, 1024), "result", "revoked", "reason", why)
	sess.end(1)
	sess.closeConn()
	return 1
}

// readErr remembers its reader's error other than io.EOF, which io.Copy
// does not tell apart from the writer's.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// commandFailed reports a lookup or start that failed.
func (s *Server) commandFailed(sess *session, w audit.Who, name, line string, err error) int {
	var un *remote.Unavailable
	switch {
	case errors.As(err, &un):
		sess.errorf("termgate: " + un.Why)
	case errors.Is(err, remote.ErrUnsupported):
		sess.errorf("termgate: this gateway's backend cannot run commands in instances")
	default:
		sess.errorf(s.userError(sess, "run a command in", name, err))
	}
	s.cfg.Audit.Event(audit.Command, w, name, "", "argv", clip(line, 1024), "result", "failed", "reason", err.Error())
	return 1
}

// sendExitSignal tells the client the command was killed by sig (RFC 4254
// 6.10), then closes the channel.
func sendExitSignal(sess *session, sig string) {
	msg := struct {
		Signal string
		Core   bool
		Msg    string
		Lang   string
	}{Signal: sig}
	_, _ = sess.ch.SendRequest("exit-signal", false, gossh.Marshal(&msg))
}
