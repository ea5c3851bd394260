package sessions

// Event is an in-band event: Take returns it between the output before
// and after it, and the client stays attached. It is never an end: the
// end comes as Take's error, with its cause. The kinds: a *ResetError
// (move.go), a *Notice (paused.go), a *Skipped (skip.go), an *Away
// (away.go), a *Resized (sizepolicy.go), a *HandRaised, a *Granted and a
// *Presence (presence.go).
type Event interface {
	// Handle calls h's method for the event's kind and returns what it
	// returns.
	Handle(h EventHandler) error
	// String is the one line a terminal shows for the event.
	String() string
}

// EventHandler is what a listener does with each kind of Event, one
// method per kind: a new kind does not compile until every listener says
// what it shows for it. An error (a failed write) is the listener's own.
type EventHandler interface {
	Reset(*ResetError) error
	Notice(*Notice) error
	Skipped(*Skipped) error
	Away(*Away) error
	Resized(*Resized) error
	HandRaised(*HandRaised) error
	Granted(*Granted) error
	Presence(*Presence) error
}

func (e *ResetError) Handle(h EventHandler) error { return h.Reset(e) }
func (n *Notice) Handle(h EventHandler) error     { return h.Notice(n) }
func (e *Skipped) Handle(h EventHandler) error    { return h.Skipped(e) }
func (a *Away) Handle(h EventHandler) error       { return h.Away(a) }
func (r *Resized) Handle(h EventHandler) error    { return h.Resized(r) }
func (h *HandRaised) Handle(v EventHandler) error { return v.HandRaised(h) }
func (g *Granted) Handle(h EventHandler) error    { return h.Granted(g) }
func (p *Presence) Handle(h EventHandler) error   { return h.Presence(p) }

// String is the reset's line; a *ResetError is also a session's cause
// (Config.OnEnd), hence its Error.
func (e *ResetError) String() string { return e.Error() }
