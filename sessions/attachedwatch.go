package sessions

// clientsChangedLocked wakes whoever waits in Client.AttachedChanges: a
// client attached or left, or the session ended. It also tells a held
// session's holder the new count, for its idle timer. Called with
// Session.mu held.
func (s *Session) clientsChangedLocked() {
	if s.held != nil {
		s.held.Clients(s.heldClientsLocked())
	}
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.publishLocked()
}

// AttachedChanges returns who is attached to the client's session now
// (as Info.Attached) and a channel that is closed at the next change: a
// client attaches or leaves, or the session ends. A listener that shows
// the list live calls it again after each close; changes between two calls
// are folded into one. While the session ends it returns nil (not news):
// the client is then closed (Done) or, after a reset, moved to the fresh
// session, and the channel closes when it has moved.
func (c *Client) AttachedChanges() ([]Attached, <-chan struct{}) {
	s, moved := c.session()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		return nil, moved
	}
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return attachedList(s.clients), s.changed
}
