package sessions

import "slices"

// Info is read by every GET /metrics and GET /api/sessions, for every
// session, so it must not wait on a session's lock: a session busy under
// its lock (a resize storm, issue 20 D4, held it for 33 s) would stall the
// whole gateway's scrape and list. So the session publishes a snapshot of
// what Info shows each time one of its fields changes, under the lock it
// holds anyway, and counts its output bytes atomically; Info reads both
// without locking.

// publishLocked refreshes the snapshot. Called with mu held (or before
// the session runs), after any change to the instance's name, the
// clients, the idle time, the recording, the holder or the size.
func (s *Session) publishLocked() {
	in := &Info{
		Instance: s.inst.Name, Name: s.name, Login: s.login, Session: s.id, Created: s.created, Clients: len(s.clients),
		Recording: s.recording, Durable: s.held != nil, Attached: attachedList(s.clients),
		Size: s.size.String(), SizePinned: !s.pin.IsZero(),
	}
	if tp, ok := s.proc.(ToolboxProcess); ok {
		in.Toolbox = tp.Toolbox()
	}
	if !s.reap.idleSince.IsZero() {
		t, reap := s.reap.idleSince, s.reapAtLocked()
		in.IdleSince, in.ReapAt = &t, &reap
	}
	if !s.reap.keepUntil.IsZero() {
		k := s.reap.keepUntil
		in.KeepUntil = &k
	}
	s.info.Store(in)
}

// Info returns a snapshot of the session's state, without waiting for the
// session.
func (s *Session) Info() Info {
	in := *s.info.Load()                    // published since newSession
	in.Attached = slices.Clone(in.Attached) // the caller's to keep
	in.BytesOut = s.bytesOut.Load()
	return in
}
