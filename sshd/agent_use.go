package sshd

import (
	"github.com/termgate/termgate/keys"
)

// agentAllowed reports whether the client's agent is to be used on the
// instance acc answers for: it offered one (ssh -A), the one decision
// allows keys.Agent, and the backend can serve a socket. A writer refused is
// told why; an observer is not (it watches, its agent is never used).
func (s *Server) agentAllowed(sess *session, acc keys.Access) bool {
	if !sess.agent {
		return false
	}
	if r := acc.Decide(keys.Agent); r != nil {
		sess.log.Info("agent forwarding refused", "instance", acc.Instance, "reason", r.Reason)
		if acc.Write {
			sess.errorf("termgate: " + r.Message)
		}
		return false
	}
	if s.agents.backend() == nil || sess.conn == nil || sess.conn.sshConn == nil {
		sess.log.Debug("agent forwarding: this backend cannot serve an agent socket")
		return false
	}
	return true
}

// agentJoin makes this client answer for its session's agent socket,
// until agentLeave (detach) or the next agentJoin (a reset moved it to a
// fresh session, whose socket is another).
func (r *relay) agentJoin() {
	r.agentLeave()
	c := r.current()
	id, done := c.SessionDone()
	leave := r.srv.agents.join(id, c.Info().Instance, c.SessionLogin(), done, &agentSource{conn: r.sess.conn.sshConn, who: r.who})
	r.agentStop = leave
}

// agentLeave stops this client answering for its session's agent socket.
func (r *relay) agentLeave() {
	if r.agentStop != nil {
		r.agentStop()
		r.agentStop = nil
	}
}
