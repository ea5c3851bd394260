package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrHolderResets is the cause a held session's clients get when its
// holder announces resets faster than a client may ask for them
// (buckets.InstanceResets): the gateway stops following them for a while.
var ErrHolderResets = errors.New("the session's holder keeps resetting it; reconnect later")

// takeHolderResetLocked limits the resets a holder announces that the
// registry follows (adopting the fresh session: an exec in the instance)
// to what a client may ask for (a bucket per instance,
// buckets.InstanceResets): the instance is untrusted, and its holder may
// announce them in a loop. Called with r.mu held.
func (r *Registry) takeHolderResetLocked(inst Instance) error {
	if retry, ok := r.holderResets.Take(inst.ID, r.cfg.Clock.Now()); !ok {
		return fmt.Errorf("%w (instance %s, next in %s)", ErrHolderResets, inst.Name, retry.Round(time.Second))
	}
	return nil
}

// follow moves the clients of old, which ended by reset, into the session
// that replaced it. It runs in old's run goroutine, after its shell ended.
func (r *Registry) follow(old *Session, oldSl *slot, reset *ResetError, clients []*Client) {
	inst := old.Instance()
	r.mu.Lock()
	next, fill := r.slotLocked(oldSl.key), false
	var err error
	switch {
	case r.closed:
		err = ErrShutdown
		if old.held != nil {
			err = ErrRestart
		}
	case old.killFailed.Load():
		err = ErrPreviousShellAlive
	case next == nil || next == oldSl:
		// No local Reset made a slot (the holder reset the session for
		// another gateway), or it gave up waiting for the kill: this
		// gateway's fresh session starts (or is adopted) here.
		if old.held != nil && len(clients) == 0 {
			// Nobody to move: the next attach adopts what the holder
			// holds (a holder announcing resets in a loop costs nothing).
			r.mu.Unlock()
			r.cfg.Logger.Info("held session reset by its holder; adopted again at the next attach", append(nameAttr(inst.Name, oldSl.key.name), "from", reset.OldSession)...)
			return
		}
		if old.held != nil {
			if err = r.takeHolderResetLocked(inst); err != nil {
				break
			}
		}
		next, fill = &slot{key: oldSl.key, who: oldSl.who, login: old.login, env: oldSl.env, ready: make(chan struct{})}, true
		r.putLocked(next)
	}
	r.mu.Unlock()
	if errors.Is(err, ErrHolderResets) {
		r.cfg.Logger.Warn("the holder announces resets faster than clients may ask for them; its clients are disconnected", "instance", inst.Name, "err", err)
	}
	if err != nil {
		closeAll(clients, err)
		return
	}
	if fill {
		r.fill(context.Background(), next, inst, reset.NewSession, old.currentSize(), old.term, old.agent, followReset)
	}
	<-next.ready
	if next.err != nil {
		closeAll(clients, next.err)
		return
	}
	next.sess.adopt(clients, reset)
}

func closeAll(clients []*Client, cause error) {
	for _, c := range clients {
		c.close(cause, false)
	}
}

// adopt moves clients into s after a reset, each with s's replay and the
// subscription to its output in one critical section, as attach does.
// Their credentials are checked again first (outside the lock: Allowed
// consults the listener's store).
func (s *Session) adopt(clients []*Client, reset *ResetError) {
	name := s.Instance().Name
	allowed := clients[:0:0]
	for _, c := range clients {
		if c.allowed != nil {
			if err := c.allowed(name); err != nil {
				c.close(&RevokedError{Reason: err.Error()}, true)
				s.log.Info("client not moved after a reset: access revoked", "client", c.label, "reason", err.Error())
				continue
			}
		}
		allowed = append(allowed, c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		closeAll(allowed, s.cause)
		return
	}
	replay := s.replay.Replay()
	info := AttachInfo{Instance: s.inst.Name, Session: s.id, Offset: s.ring.End(), Replay: len(replay)}
	ev := &ResetError{OldSession: reset.OldSession, NewSession: s.id, By: reset.By, Attach: info}
	n := 0
	for _, c := range allowed {
		if c.moveTo(s, info, ev, replay) {
			s.clients[c] = struct{}{}
			s.presence.adopted(c)
			n++
		}
	}
	if n > 0 {
		s.joinedLocked()
		s.applySizePolicyLocked(false)
		s.log.Info("clients moved here by a reset", "from", reset.OldSession, "moved", n, "clients", len(s.clients))
	}
}

// moveTo makes s the client's session: the reset event goes into its
// queue, then s's replay. False when the client was closed meanwhile (a
// Detach). Called with s.mu held.
func (c *Client) moveTo(s *Session, info AttachInfo, ev *ResetError, replay []byte) bool {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return false
	}
	c.sess, c.info = s, info
	c.skip.behind = false  // the fresh session's replay brings it forward
	c.granted.Store(false) // a grant lasts for its session only
	c.handUp.Store(false)
	c.queue = append(c.queue, []byte{}) // the event's place
	c.events = append(c.events, ev)
	if len(replay) > 0 {
		c.queue = append(c.queue, replay)
		c.queued += len(replay)
	}
	close(c.moved)
	c.moved = make(chan struct{})
	c.mu.Unlock()
	c.signal()
	return true
}
