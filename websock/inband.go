package websock

import "github.com/termgate/termgate/sessions"

// connEvents sends a client's in-band events (sessions.Event) as the
// frames of events.go, away.go and presence.go; the client stays
// attached. Only the writer goroutine (writeLoop) uses it, between the
// output before and after each event. An error is a failed write.
type connEvents conn

var _ sessions.EventHandler = (*connEvents)(nil)

// Reset tells the client that sessions moved its attach to the
// instance's fresh session: the reset event goes before the new
// session's output.
func (e *connEvents) Reset(reset *sessions.ResetError) error {
	c := (*conn)(e)
	info := reset.Attach
	c.log.Debug("websocket moved to a new session", "instance", c.name, "session", info.Session)
	werr := e.send(resetEvent{Type: "reset", Session: info.Session, Offset: info.Offset, Replay: info.Replay})
	// The new session's clients events come after its reset event.
	c.mu.Lock()
	c.toldSession = info.Session
	close(c.moved)
	c.moved = make(chan struct{})
	c.mu.Unlock()
	return werr
}

// Notice: the instance paused or runs again; an error event says so.
func (e *connEvents) Notice(n *sessions.Notice) error {
	f := errorFrame(n.Message)
	return (*conn)(e).write(f.typ, f.data)
}

// Skipped: brought forward; the redraw follows.
func (e *connEvents) Skipped(s *sessions.Skipped) error {
	e.log.Debug("websocket client brought forward", "offset", s.Offset, "skipped", s.Bytes)
	return e.send(skippedEvent{Type: "skipped", Offset: s.Offset, Bytes: s.Bytes, Replay: s.Replay})
}

// Away: back after leaving, after the replay (away.go).
func (e *connEvents) Away(a *sessions.Away) error { return e.send(newAwayEvent(a)) }

// Resized: another client's size, a pin, a fall-back.
func (e *connEvents) Resized(r *sessions.Resized) error {
	return e.send(sizeEvent{Type: "size", Cols: r.Size.Cols, Rows: r.Size.Rows, Pinned: r.Pinned})
}

// HandRaised: an observer asks to type.
func (e *connEvents) HandRaised(h *sessions.HandRaised) error {
	return e.send(handEvent{Type: "hand", Who: h.Who.Who, Via: h.Who.Via})
}

// Granted: this observer may type now.
func (e *connEvents) Granted(g *sessions.Granted) error {
	e.toldRO.Store(false)
	return e.send(grantedEvent{Type: "granted", By: g.By})
}

// Presence: joins and leaves; the page's roster shows them, not a frame.
func (e *connEvents) Presence(*sessions.Presence) error { return nil }

func (e *connEvents) send(v any) error {
	f := eventFrame(v)
	return (*conn)(e).write(f.typ, f.data)
}
