package sessions

// The registry's slots are keyed by instance and session name (addr.go):
// an instance's default session has the name "". Instance events (a stop,
// a rename, a pause) apply to all of an instance's slots. These helpers
// are called with Registry.mu held.

// slotKey is a slot's place: the instance's ID and the session's name.
type slotKey struct{ id, name string }

func (r *Registry) slotLocked(k slotKey) *slot { return r.slots[k.id][k.name] }

// putLocked puts sl at its key, replacing what was there.
func (r *Registry) putLocked(sl *slot) {
	m := r.slots[sl.key.id]
	if m == nil {
		m = map[string]*slot{}
		r.slots[sl.key.id] = m
	}
	m[sl.key.name] = sl
}

// dropLocked removes sl, if it is still at its key.
func (r *Registry) dropLocked(sl *slot) {
	m := r.slots[sl.key.id]
	if m[sl.key.name] != sl {
		return
	}
	delete(m, sl.key.name)
	if len(m) == 0 {
		delete(r.slots, sl.key.id)
	}
}

// instanceSlotsLocked returns the slots of the instance with that ID.
func (r *Registry) instanceSlotsLocked(id string) []*slot {
	out := make([]*slot, 0, len(r.slots[id]))
	for _, sl := range r.slots[id] {
		out = append(out, sl)
	}
	return out
}

// allSlotsLocked returns every slot.
func (r *Registry) allSlotsLocked() []*slot {
	var out []*slot
	for _, m := range r.slots {
		for _, sl := range m {
			out = append(out, sl)
		}
	}
	return out
}

// capLocked refuses a new slot at k past Config.MaxPerInstance, or, for a
// named session, past Config.MaxNamedPerWho of the sessions who started
// (a flood of names from one credential across instances). name is the
// instance's name, for the message.
func (r *Registry) capLocked(k slotKey, name, who string) error {
	if n := len(r.slots[k.id]); n >= r.cfg.MaxPerInstance {
		return &TooManySessionsError{Instance: name, Max: r.cfg.MaxPerInstance}
	}
	if k.name == "" || who == "" {
		return nil
	}
	n := 0
	for _, m := range r.slots {
		for nm, sl := range m {
			if nm != "" && sl.who == who {
				n++
			}
		}
	}
	if n >= r.cfg.MaxNamedPerWho {
		return &TooManySessionsError{Who: who, Max: r.cfg.MaxNamedPerWho}
	}
	return nil
}
