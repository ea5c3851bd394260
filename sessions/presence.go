package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Presence (issue 23 item 3): who is attached and what they did last
// (Registry.Who), join and leave events for the listeners that show them
// (Config.NotifyJoins), and an observer's raised hand, which a writer may
// answer by granting that person's observer clients write access (input
// and window size; not reset, keep or pin) for the rest of the session: a
// reset or a reattach ends it. Every such event goes in band; the ones a
// flood could multiply (joins, hands) are dropped for a client that already
// has maxDroppableEvents waiting, so a client that never reads holds no
// more than that.

const maxDroppableEvents = 32

// Presence is an in-band event (Config.NotifyJoins): someone joined or
// left the session.
type Presence struct {
	Who    Attached
	Joined bool
}

func (p *Presence) String() string {
	what := "left"
	if p.Joined {
		what = "joined"
	}
	return fmt.Sprintf("%s %s (%s)", describe(p.Who), what, access(p.Who))
}

// HandRaised is an in-band event for the writers: an observer asks to type.
type HandRaised struct{ Who Attached }

func (h *HandRaised) String() string {
	return fmt.Sprintf("%s raises a hand: they ask to type", describe(h.Who))
}

// Granted is an in-band event for an observer given write access.
type Granted struct{ By string }

func (g *Granted) String() string {
	return fmt.Sprintf("%s gave you write access for this session: your input now goes to the shell", g.By)
}

// ErrNotObserver: only an observer raises a hand.
var ErrNotObserver = errors.New("you can already type: only an observer raises a hand")

// NoObserverError: a grant named nobody attached as an observer.
type NoObserverError struct{ Who string }

func (e *NoObserverError) Error() string {
	return fmt.Sprintf("no observer named %q is attached to this session", e.Who)
}

func describe(a Attached) string {
	who := a.Who
	if who == "" {
		who = "someone"
	}
	return fmt.Sprintf("%s via %s", who, a.Via)
}

func access(a Attached) string {
	switch {
	case a.Granted:
		return "read-write, granted"
	case a.ReadOnly:
		return "read-only"
	}
	return "read-write"
}

// attachedOf describes c now. Called with the session's mu held.
func (c *Client) attachedOf() Attached {
	a := c.who
	a.ReadOnly, a.Granted, a.Hand = c.ReadOnly(), c.granted.Load(), c.handUp
	return a
}

// notifyDroppable queues an event that a flood could multiply, unless c
// has enough waiting already. Called with the session's mu held.
func (c *Client) notifyDroppable(ev Event) {
	c.mu.Lock()
	full := len(c.events) >= maxDroppableEvents
	c.mu.Unlock()
	if !full {
		c.notifyEvent(ev)
	}
}

// presenceLocked tells the other clients that c joined or left.
func (s *Session) presenceLocked(c *Client, joined bool) {
	if !s.cfg.NotifyJoins {
		return
	}
	ev := &Presence{Who: c.attachedOf(), Joined: joined}
	for o := range s.clients {
		if o != c {
			o.notifyDroppable(ev)
		}
	}
}

// RaiseHand asks the session's writers to let this observer type. A hand
// already raised is not raised again (no second notice), however often it
// is asked.
func (c *Client) RaiseHand() error {
	if !c.ReadOnly() {
		return ErrNotObserver
	}
	s, _ := c.session()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raiseLocked(c)
	return nil
}

func (s *Session) raiseLocked(c *Client) {
	// ReadOnly again, under the lock grant takes: a raise that passed
	// RaiseHand's check just before a grant must not raise the granted
	// writer's hand once more.
	if c.handUp || !c.ReadOnly() || s.state != stateRunning {
		return
	}
	if _, ok := s.clients[c]; !ok {
		return
	}
	c.handUp = true
	ev := &HandRaised{Who: c.attachedOf()}
	for o := range s.clients {
		if !o.ReadOnly() {
			o.notifyDroppable(ev)
		}
	}
	s.clientsChangedLocked()
}

// Grant gives the observers named who write access for the rest of the
// session; c must be a writer by its credentials. It returns how many
// clients it granted.
func (c *Client) Grant(who string) (int, error) {
	if c.who.ReadOnly {
		return 0, ErrReadOnly
	}
	s, _ := c.session()
	return s.grant(who, c.who.Who)
}

func (s *Session) grant(who, by string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.clients {
		if c.who.Who != who || !c.ReadOnly() {
			continue
		}
		c.granted.Store(true)
		c.handUp = false
		c.notifyEvent(&Granted{By: by})
		n++
	}
	if n == 0 {
		return 0, &NoObserverError{Who: who}
	}
	s.log.Info("write access granted", "who", who, "by", by, "clients", n)
	s.clientsChangedLocked()
	return n, nil
}

// Who lists who is attached to the instance's session now, with when each
// last typed (Attached.LastInput), oldest first.
func (r *Registry) Who(ctx context.Context, name string) ([]Attached, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return describeClients(s.clients, true), nil
}

// RaiseHand raises the hand of every observer client named who attached to
// the instance's session (ssh HOST hand INSTANCE); it returns how many.
func (r *Registry) RaiseHand(ctx context.Context, name, who string) (int, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.clients {
		if c.who.Who == who && c.ReadOnly() {
			s.raiseLocked(c)
			n++
		}
	}
	if n == 0 {
		return 0, &NoObserverError{Who: who}
	}
	return n, nil
}

// Grant gives the observers named who write access for the rest of the
// instance's session (ssh HOST grant INSTANCE WHO); by names the writer.
func (r *Registry) Grant(ctx context.Context, name, who, by string) (int, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return 0, err
	}
	return s.grant(who, by)
}

// lastInputOf is when c last typed, or nil.
func (c *Client) lastInputOf() *time.Time {
	ns := c.lastIn.Load()
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}
