package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// presence is who is attached as the collaboration features see it. It
// has a lock of its own, so a raised hand, a grant or Registry.Who never
// takes Session.mu, and the notices go out after the session's critical
// section. Its members follow Session.clients in the same order: an attach
// and a leave take presence.mu before they let Session.mu go (register,
// unregister) and tell the others under it alone; a drop, a reset's move
// and the session's end change the members under both locks, without a
// notice (as before). presence.mu is taken after Session.mu and before
// Client.mu, and Session.mu is never taken under it.
type presence struct {
	mu      sync.Mutex
	members map[*Client]struct{} // guarded by mu
	closing bool                 // the session is closing: no hand is raised (guarded by mu)
}

// attachedOf describes c now.
func (c *Client) attachedOf() Attached {
	a := c.who
	a.ReadOnly, a.Granted, a.Hand = c.ReadOnly(), c.granted.Load(), c.handUp.Load()
	return a
}

// notifyDroppable queues an event that a flood could multiply, unless c
// has enough waiting already. Called with presence.mu held.
func (c *Client) notifyDroppable(ev Event) {
	c.mu.Lock()
	full := len(c.events) >= maxDroppableEvents
	c.mu.Unlock()
	if !full {
		c.notifyEvent(ev)
	}
}

// joinedLocked adds c and, with notify, tells the others. Called with
// p.mu held.
func (p *presence) joinedLocked(c *Client, notify bool) {
	if p.members == nil {
		p.members = map[*Client]struct{}{}
	}
	p.members[c] = struct{}{}
	p.tellLocked(c, true, notify)
}

// leftLocked takes c out and, with notify, tells the others. Called with
// p.mu held.
func (p *presence) leftLocked(c *Client, notify bool) {
	delete(p.members, c)
	p.tellLocked(c, false, notify)
}

func (p *presence) tellLocked(c *Client, joined, notify bool) {
	if !notify {
		return
	}
	ev := &Presence{Who: c.attachedOf(), Joined: joined}
	for o := range p.members {
		if o != c {
			o.notifyDroppable(ev)
		}
	}
}

// dropped takes c out without a notice (a slow client's drop). Called
// with Session.mu held.
func (p *presence) dropped(c *Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.members, c)
}

// adopted adds clients a reset moved here, without a notice. Called with
// Session.mu held.
func (p *presence) adopted(c *Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.joinedLocked(c, false)
}

// close stops hands from being raised. Called with Session.mu held, as
// the session starts closing.
func (p *presence) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closing = true
}

// end forgets everyone: the session's clients are closed or moved on, and
// a grant must not reach one a reset moved. Called with Session.mu held.
func (p *presence) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.members)
}

// RaiseHand asks the session's writers to let this observer type. A hand
// already raised is not raised again (no second notice), however often it
// is asked.
func (c *Client) RaiseHand() error {
	if !c.ReadOnly() {
		return ErrNotObserver
	}
	s, _ := c.session()
	s.presence.mu.Lock()
	raised := s.presence.raiseLocked(c)
	s.presence.mu.Unlock()
	if raised {
		s.clientsChanged()
	}
	return nil
}

// raiseLocked raises c's hand and tells the writers; false when it was
// up already or c cannot raise one. Called with p.mu held.
func (p *presence) raiseLocked(c *Client) bool {
	// ReadOnly again, under the lock grant takes: a raise that passed
	// RaiseHand's check just before a grant must not raise the granted
	// writer's hand once more.
	if c.handUp.Load() || !c.ReadOnly() || p.closing {
		return false
	}
	if _, ok := p.members[c]; !ok {
		return false
	}
	c.handUp.Store(true)
	ev := &HandRaised{Who: c.attachedOf()}
	for o := range p.members {
		if !o.ReadOnly() {
			o.notifyDroppable(ev)
		}
	}
	return true
}

// clientsChanged publishes a change presence made to what the clients
// show (a hand, a grant), while the session runs.
func (s *Session) clientsChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateRunning {
		s.clientsChangedLocked()
	}
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
	n := s.presence.grant(who, by)
	if n == 0 {
		return 0, &NoObserverError{Who: who}
	}
	s.log.Info("write access granted", "who", who, "by", by, "clients", n)
	s.clientsChanged()
	return n, nil
}

func (p *presence) grant(who, by string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.members {
		if c.who.Who != who || !c.ReadOnly() {
			continue
		}
		c.granted.Store(true)
		c.handUp.Store(false)
		c.notifyEvent(&Granted{By: by})
		n++
	}
	return n
}

// Who lists who is attached to the instance's session now, with when each
// last typed (Attached.LastInput), oldest first.
func (r *Registry) Who(ctx context.Context, name string) ([]Attached, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return nil, err
	}
	s.presence.mu.Lock()
	defer s.presence.mu.Unlock()
	return describeClients(s.presence.members, true), nil
}

// RaiseHand raises the hand of every observer client named who attached to
// the instance's session (ssh HOST hand INSTANCE); it returns how many.
func (r *Registry) RaiseHand(ctx context.Context, name, who string) (int, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return 0, err
	}
	s.presence.mu.Lock()
	n, raised := 0, false
	for c := range s.presence.members {
		if c.who.Who == who && c.ReadOnly() {
			raised = s.presence.raiseLocked(c) || raised
			n++
		}
	}
	s.presence.mu.Unlock()
	if raised {
		s.clientsChanged()
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
