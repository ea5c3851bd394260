package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// openHow says what fill may do to get a slot's shell.
type openHow int

const (
	// adoptOrStart: an attach adopts the instance's held session, or
	// starts a shell when none is held.
	adoptOrStart openHow = iota
	// resetHeld: a reset adopts the held session only when it is the fresh
	// one (the spec's ID); a held session of another ID is reset first.
	resetHeld
	// adoptOnly: a starting gateway adopts what is held, starts nothing.
	adoptOnly
	// followReset: after a reset its holder announced, adopt the fresh
	// session only when it is the one announced (the spec's ID), else
	// refuse; start one when none is held.
	followReset
)

// open gets the shell for a new slot: from the instance's holder when the
// backend is an Adopter and a holder holds one (adopted), else from Start.
// A holder that exists but cannot be adopted now is an error: starting a
// second shell beside it would hide the user's.
func (r *Registry) open(ctx context.Context, inst Instance, spec StartSpec, how openHow) (proc Process, adopted bool, err error) {
	a, ok := r.cfg.Backend.(Adopter)
	if ok {
		hp, err := a.Adopt(ctx, inst, spec.Name)
		if err == nil && how == resetHeld && hp.Held().Session != spec.SessionID {
			hp, err = resetThenAdopt(ctx, a, inst, spec.Name, hp, spec.SessionID)
		}
		if err == nil && how == followReset && hp.Held().Session != spec.SessionID {
			_ = hp.Release() // its shell is left alone, as any we cannot adopt
			err = fmt.Errorf("the holder announced a reset into session %s but holds %q", spec.SessionID, truncate(hp.Held().Session, 64))
		}
		switch {
		case err == nil:
			return hp, true, nil
		case !errors.Is(err, ErrNotHeld):
			return nil, false, fmt.Errorf("connect to the held session in %s: %w (its shell keeps running; try again)", inst.Name, err)
		}
	}
	if how == adoptOnly {
		return nil, false, ErrNotHeld
	}
	p, err := r.cfg.Backend.Start(ctx, inst, spec)
	if err != nil {
		return nil, false, fmt.Errorf("start shell in %s: %w", inst.Name, err)
	}
	if hp, held := p.(HeldProcess); held && ok && how == resetHeld && hp.Held().Session != spec.SessionID {
		// The start found a live holder after all (a racer's, or one that
		// was not answering on its socket when Adopt looked): a reset
		// must still end up in a fresh shell.
		if hp, err = resetThenAdopt(ctx, a, inst, spec.Name, hp, spec.SessionID); err != nil {
			return nil, false, fmt.Errorf("reset the held session in %s: %w", inst.Name, err)
		}
		return hp, true, nil
	}
	return p, false, nil
}

// resetThenAdopt resets a held session this registry did not hold (another
// gateway's, or one whose connection broke while it was being reset) and
// adopts the fresh session id.
func resetThenAdopt(ctx context.Context, a Adopter, inst Instance, name string, hp HeldProcess, id string) (HeldProcess, error) {
	err := hp.Reset(ctx, id)
	_ = hp.Release() // this connection only carried the reset
	if err != nil {
		return nil, fmt.Errorf("reset: %w", err)
	}
	return a.Adopt(ctx, inst, name)
}

// AdoptAll adopts every session the backend's holders hold, so that a
// starting gateway lists them (and their holders learn of its clients)
// before anyone attaches. Failures are logged: an instance whose session
// is not adopted now is adopted at its first attach. ctx bounds the
// adoptions (each also gets StartTimeout). It returns how many sessions
// were adopted.
func (r *Registry) AdoptAll(ctx context.Context) int {
	a, ok := r.cfg.Backend.(Adopter)
	if !ok {
		return 0
	}
	held, err := a.HeldSessions(ctx)
	if err != nil {
		r.cfg.Logger.Warn("could not list the held sessions to adopt; they are adopted at their first attach", "err", err)
		return 0
	}
	var n atomic.Int32
	var wg sync.WaitGroup
	sem := make(chan struct{}, adoptParallel)
	for _, h := range held {
		inst := h.Instance
		sl, created, err := r.slotFor(inst, h.Name, "", "")
		if errors.Is(err, ErrClosed) {
			break // shutting down
		}
		if err != nil {
			r.cfg.Logger.Warn("a held session is not adopted", append(nameAttr(inst.Name, h.Name), "err", err)...)
			continue
		}
		if !created {
			continue // an attach got there first
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.fill(ctx, sl, inst, newID(), DefaultSize, "", false, adoptOnly)
			switch {
			case sl.err == nil:
				n.Add(1)
			case !errors.Is(sl.err, ErrNotHeld):
				r.cfg.Logger.Warn("could not adopt a held session; it is tried again at the first attach", append(nameAttr(inst.Name, h.Name), "err", sl.err)...)
			}
		})
	}
	wg.Wait()
	if len(held) > 0 {
		r.cfg.Logger.Info("adopted durable sessions", "sessions", n.Load(), "held", len(held))
	}
	return int(n.Load())
}

// AdoptIn adopts the session inst's holder holds, as AdoptAll does for
// one instance (a starting gateway's background work, instance by
// instance): adopted is false when nothing is held there or an attach got
// there first; err says why a held session could not be adopted (an
// attach tries again).
func (r *Registry) AdoptIn(ctx context.Context, inst Instance) (adopted bool, err error) {
	if _, ok := r.cfg.Backend.(Adopter); !ok {
		return false, nil
	}
	sl, created, err := r.slotFor(inst, "", "", "")
	if err != nil || !created {
		return false, err
	}
	r.fill(ctx, sl, inst, newID(), DefaultSize, "", false, adoptOnly)
	switch {
	case sl.err == nil:
		return true, nil
	case errors.Is(sl.err, ErrNotHeld):
		return false, nil
	}
	return false, sl.err
}

// adoptParallel bounds the adoptions AdoptAll runs at once: each is a few
// engine calls, and a slow holder must not hold up the rest.
const adoptParallel = 8
