package sessions

// Recheck asks every attached client's AttachOptions.Allowed whether its
// credentials still allow its instance, and disconnects the refused ones
// with a *RevokedError. The gateway calls it after every reload of its
// keys, tokens or CAs, so that revocation is immediate.
func (r *Registry) Recheck() {
	for _, s := range r.live() {
		s.recheck()
	}
}

// live returns the running sessions.
func (r *Registry) live() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Session
	for _, sl := range r.allSlotsLocked() {
		if sl.ended() && sl.sess != nil {
			out = append(out, sl.sess)
		}
	}
	return out
}

// recheck disconnects the clients whose Allowed refuses the instance's
// current name. Allowed runs outside the session's lock: it consults the
// listener's credential store.
func (s *Session) recheck() {
	s.mu.Lock()
	name := s.inst.Name
	var check []*Client
	for c := range s.clients {
		if c.allowed != nil {
			check = append(check, c)
		}
	}
	s.mu.Unlock()
	for _, c := range check {
		s.recheckClient(c, name)
	}
}

// Recheck asks the client's AttachOptions.Allowed again, as Registry.Recheck
// does for every client, and disconnects it with a *RevokedError when
// refused. A listener calls it when it knows its credentials lapse at a
// given time (an SSH certificate's ValidBefore), with no reload to tell.
func (c *Client) Recheck() {
	s, _ := c.session()
	if c.allowed == nil || s == nil {
		return
	}
	s.recheckClient(c, s.Instance().Name)
}

// recheckClient disconnects c when its Allowed refuses name.
func (s *Session) recheckClient(c *Client, name string) {
	err := c.allowed(name)
	if err == nil {
		return
	}
	if c.close(&RevokedError{Reason: err.Error()}, true) {
		s.remove(c, "client disconnected: access revoked", "reason", err.Error())
	}
}

// rename makes the session follow its instance's new name; it reports
// whether the name changed.
func (s *Session) rename(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" || name == s.inst.Name {
		return false
	}
	s.log.Info("instance renamed", "from", s.inst.Name, "to", name)
	s.inst.Name = name
	s.publishLocked()
	return true
}
