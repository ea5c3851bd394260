package sessions

import "context"

// CheckAttach answers whether Attach(ctx, addr, opts) would be refused,
// without starting or joining anything: the address, the instance, the
// caller's access to it, a running session's login, and the caps on new
// sessions. nil means Attach would try (it may still fail while it starts
// the shell). A browser cannot read the HTTP status of a refused
// WebSocket handshake, so the page asks this after one fails, to say why
// (websock's terminal route without the upgrade).
func (r *Registry) CheckAttach(ctx context.Context, addr string, opts AttachOptions) error {
	a, err := ParseAddr(addr)
	if err != nil {
		return err
	}
	inst, err := r.lookup(ctx, a.Instance, nil)
	if err != nil {
		return err
	}
	if opts.Allowed != nil {
		if err := opts.Allowed(inst.Name); err != nil {
			return &RevokedError{Reason: err.Error()}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	k := slotKey{inst.ID, a.Name}
	sl := r.slotLocked(k)
	if sl == nil {
		if _, held := r.cfg.Backend.(Adopter); opts.ReadOnly && !held {
			return ErrNothingToWatch // (a holder may hold one: Attach looks)
		}
		return r.capLocked(k, inst.Name, opts.Who)
	}
	select {
	case <-sl.ready:
	default:
		return nil // starting: Attach waits for it
	}
	if sl.sess != nil && !opts.ReadOnly && sl.sess.login != opts.Login {
		return &WrongLoginError{Addr: a.String(), Login: sl.sess.login, Asked: opts.Login}
	}
	return nil
}
