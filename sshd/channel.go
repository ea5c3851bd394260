package sshd

import (
	"fmt"
	"io"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/sessions"
)

// sessionChannel serves a "session" channel: it accepts it, starts the
// pump that moves its data into a bounded inbox (see inbox.go) and the
// drain of its stderr, and runs its request loop until the channel is
// closed on both sides or the connection is gone.
//
// Every channel counts, from its open until it is gone, against the
// connection's MaxChannelsPerConn and the key's MaxSessionsPerKey, whether
// or not it ever starts anything; one over either cap is refused before it
// is accepted.
func (s *Server) sessionChannel(cs *connState, nc gossh.NewChannel) {
	release, refused := s.channelSlot(cs)
	if refused != "" { // Debug: a flood of opens must not flood the log; the client reads the reason
		cs.log.Debug("channel refused", "reason", refused)
		_ = nc.Reject(gossh.ResourceShortage, refused)
		return
	}
	defer release()
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	sess := newSession(cs, ch, s.cfg.CloseGrace)
	sess.goTracked(&s.track, func() {
		sess.in.pump(ch, func() {
			sess.log.Info(fmt.Sprintf("closing a channel that sent more than %d bytes before asking for a shell or command", inboxSize))
			_ = ch.Close()
		})
	})
	// The client's stderr (extended data) is never read by termgate; left
	// in x/crypto it would hold up to the channel's window.
	sess.goTracked(&s.track, func() { _, _ = io.Copy(io.Discard, ch.Stderr()) })
	s.requests(sess, reqs)
	close(sess.closed)
	sess.in.setDiscard() // nobody needs its data now; unblocks the pump
	sess.wg.Wait()       // the pump and the drain end with the channel's reads
}

// channelSlot takes a channel slot of the connection and a session slot of
// its key, or says why the channel is refused.
func (s *Server) channelSlot(cs *connState) (release func(), refused string) {
	key := cs.verifiedKey()
	if key == nil {
		return nil, "permission denied"
	}
	cs.mu.Lock()
	if max := s.cfg.MaxChannelsPerConn; max > 0 && cs.channels >= max {
		cs.mu.Unlock()
		return nil, fmt.Sprintf("termgate: at most %d sessions per connection; close one and try again", max)
	}
	cs.channels++
	cs.mu.Unlock()
	keyRelease, ok := s.lim.keySession(capKey(key))
	if !ok {
		cs.releaseChannel()
		return nil, fmt.Sprintf("termgate: this key already has %d sessions open; close one and try again", s.cfg.MaxSessionsPerKey)
	}
	return func() {
		keyRelease()
		cs.releaseChannel()
	}, ""
}

// requestHandler answers one request of a session channel: whether it
// succeeded, and what to run once the reply is sent (a shell or command
// starts only after the client was told it may).
type requestHandler func(s *Server, sess *session, req *gossh.Request) (ok bool, then func())

// sessionRequests are the session requests termgate answers; every other
// type is refused. x11-req is refused like the rest, with a log line naming
// what was asked for; subsystem serves
// only "sftp" (subsystem.go).
var sessionRequests = map[string]requestHandler{
	"pty-req":       (*Server).ptyRequest,
	"window-change": (*Server).windowChange,
	"env":           (*Server).envRequest,
	"shell":         (*Server).startRequest,
	"exec":          (*Server).startRequest,
	"subsystem":     (*Server).subsystemRequest,
	// ssh -A: the client offers its agent; what uses it is decided when
	// the shell or command starts (agent.go).
	"auth-agent-req@openssh.com": (*Server).agentRequest,
}

// refusedRequests names, for the log, what a refused request would have
// set up.
var refusedRequests = map[string]string{
	"x11-req": "X11 forwarding",
}

// requests is the channel's request loop: each request is answered in
// order and without waiting on anything but the reply's write, since
// x/crypto queues a channel's requests behind the connection's reads. A
// channel that asks for no shell or command within ChannelStartTimeout is
// closed.
func (s *Server) requests(sess *session, reqs <-chan *gossh.Request) {
	start := time.NewTimer(s.cfg.ChannelStartTimeout)
	defer start.Stop()
	startC := start.C
	for {
		select {
		case req, ok := <-reqs:
			if !ok {
				return
			}
			s.answer(sess, req)
			if sess.started {
				startC = nil
			}
		case <-startC:
			startC = nil
			if sess.in.abandonUnstarted() {
				sess.log.Info(fmt.Sprintf("closing a channel that asked for no shell or command within %v", s.cfg.ChannelStartTimeout))
				_ = sess.ch.Close()
			}
		}
	}
}

// answer dispatches one request by its type and replies to it.
func (s *Server) answer(sess *session, req *gossh.Request) {
	h := sessionRequests[req.Type]
	if h == nil {
		if what, known := refusedRequests[req.Type]; known {
			sess.log.Debug("refused a session request", "request", req.Type, "what", what)
		}
		_ = req.Reply(false, nil)
		return
	}
	ok, then := h(s, sess, req)
	_ = req.Reply(ok, nil)
	if then != nil {
		then()
	}
}

// startRequest starts the session's handler for a shell or exec request,
// once per channel; exec's command line goes to the router as is.
func (s *Server) startRequest(sess *session, req *gossh.Request) (bool, func()) {
	var cmd struct{ Line string }
	if sess.started || (req.Type == "exec" && gossh.Unmarshal(req.Payload, &cmd) != nil) {
		return false, nil
	}
	if !sess.in.start() { // closed already: starting nothing, or sending too much first
		return false, nil
	}
	sess.started, sess.cmd = true, cmd.Line
	return true, func() { s.track.Go(func() { s.serveSession(sess) }) }
}

// serveSession runs the middleware chain and makes sure the exit status is
// sent and the channel closed before it returns.
func (s *Server) serveSession(sess *session) {
	defer sess.end(0)
	s.handler(sess)
}

// agentRequest records that the client offers its agent, before the shell
// or command starts (OpenSSH sends it without asking for a reply).
func (s *Server) agentRequest(sess *session, req *gossh.Request) (bool, func()) {
	if sess.started {
		return false, nil
	}
	sess.agent = true
	return true, nil
}

// ptyRequest records the terminal (RFC 4254 6.2), once and before the
// shell starts. Only the TERM name and the size are used: the session's
// terminal is the instance's, and modes are the shell's business.
func (s *Server) ptyRequest(sess *session, req *gossh.Request) (bool, func()) {
	if sess.started || sess.pty != nil {
		return false, nil
	}
	p, ok := parsePty(req.Payload)
	if !ok {
		return false, nil
	}
	sess.pty, sess.win = &p, newWindowWatch(p.size)
	return true, nil
}

// windowChange records a window change (RFC 4254 6.7); the relay picks it
// up from the window watch (a resize, or the warning for a bad size, must
// not hold up the request loop).
func (s *Server) windowChange(sess *session, req *gossh.Request) (bool, func()) {
	var m struct{ Cols, Rows, WidthPx, HeightPx uint32 }
	if err := gossh.Unmarshal(req.Payload, &m); err != nil || m.Cols > 1<<24 || m.Rows > 1<<24 {
		return false, nil
	}
	if sess.win != nil {
		sess.win.set(sessions.Size{Cols: int(m.Cols), Rows: int(m.Rows)})
	}
	return true, nil
}

// envRequest accepts an env request (RFC 4254 6.4, ssh -o SetEnv or
// SendEnv) for TERM and the names --accept-env matches (default LANG
// LC_*), before the session starts, and keeps it for a command (ssh
// INSTANCE@HOST CMD: remote.Command.Env) or the shell of a new session
// (sessions.AttachOptions.Env; a session already running keeps its
// environment). Others are refused, which OpenSSH's client ignores, as
// sshd's are.
func (s *Server) envRequest(sess *session, req *gossh.Request) (bool, func()) {
	kv, ok := envAllowed(req.Payload, s.acceptEnv)
	if !ok {
		sess.log.Debug("refused an environment variable", "request", req.Type)
		return false, nil
	}
	if !sess.started { // the handler reads env once started: too late then
		sess.env = keepEnv(sess.env, kv)
	}
	return true, nil
}

// Bounds of what a session keeps of env requests: a client sends a few.
const (
	maxEnvVars  = 32
	maxEnvValue = 1024
)

// keepEnv sets kv (NAME=VALUE) in env, replacing an earlier value of the
// same name; past maxEnvVars names, new ones are dropped.
func keepEnv(env []string, kv string) []string {
	name, _, _ := strings.Cut(kv, "=")
	for i, e := range env {
		if n, _, _ := strings.Cut(e, "="); n == name {
			env[i] = kv
			return env
		}
	}
	if len(env) >= maxEnvVars {
		return env
	}
	return append(env, kv)
}

// envAllowed reports whether an env request's payload names a variable
// the patterns accept (acceptEnv) with a value that can be passed on
// (bounded, no NUL, which no environment can hold), and returns it as
// NAME=VALUE.
func envAllowed(payload []byte, patterns []string) (string, bool) {
	var kv struct{ Name, Value string }
	if err := gossh.Unmarshal(payload, &kv); err != nil {
		return "", false
	}
	if len(kv.Value) > maxEnvValue || strings.ContainsRune(kv.Value, 0) || !acceptEnv(patterns, kv.Name) {
		return "", false
	}
	return kv.Name + "=" + kv.Value, true
}
