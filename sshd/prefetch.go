package sshd

import (
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// prefetch starts looking up the instance the login name names as soon as
// the client has authenticated, when this key may open a terminal there:
// the client's channel, PTY and shell requests (three round trips) then
// overlap the backend's round trip, which an attach would otherwise wait
// for after the shell request (0.75–2 ms on the project's machine, see
// docs/PERFORMANCE.md; the Docker backend answers a lookup of a container
// it already knows runs from memory, so a reattach to a live session
// waits for nothing there). The attach uses the answer
// only when it names the same instance and is fresh
// (sessions.AttachOptions.Prefetch); a command ("list", "reset") leaves it
// unused. The lookup runs in a tracked goroutine bound to the connection.
func (s *Server) prefetch(cs *connState, u sshUser) {
	cs.mu.Lock()
	id := cs.identity
	cs.mu.Unlock()
	user := u.instance
	if u.problem() != "" || sessions.CheckName(user) != nil || id.On(user, s.cfg.Switches).Decide(keys.Terminal) != nil {
		return
	}
	p, run := s.cfg.Registry.Prefetch(cs.ctx, user)
	cs.mu.Lock()
	cs.prefetch = p
	cs.mu.Unlock()
	s.track.Go(run)
}

// prefetched returns the connection's prefetched lookup, if any.
func (cs *connState) prefetched() *sessions.Prefetch {
	if cs == nil {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.prefetch
}
