package sessions

import (
	"context"
	"time"
)

// prefetchTTL is how old a prefetched lookup may be when Attach uses it:
// about as fresh as the lookup Attach would make itself (an attach always
// lands a little after its lookup), give or take the client's round trips.
const prefetchTTL = time.Second

// prefetchTimeout bounds the prefetched lookup on its own.
const prefetchTimeout = 10 * time.Second

// Prefetch is a lookup of an instance started before the attach that needs
// it, so a listener that learns early which instance a client will attach
// to overlaps the backend's round trip with the rest of the client's
// handshake (SSH: the login name is known once the client has
// authenticated; opening the channel, the PTY and the shell requests
// follow). Attach uses it through AttachOptions.Prefetch.
type Prefetch struct {
	name string
	done chan struct{} // closed once inst, err and at are set
	inst Instance
	err  error
	at   time.Time // when the backend answered
}

// Prefetch returns a lookup of name for AttachOptions.Prefetch and the
// function that makes it. The caller runs run in a goroutine it owns: run
// returns once the backend has answered, ctx is done or prefetchTimeout
// has passed. Nothing is looked up when name is not a valid instance name.
func (r *Registry) Prefetch(ctx context.Context, name string) (p *Prefetch, run func()) {
	p = &Prefetch{name: name, done: make(chan struct{})}
	return p, func() {
		defer close(p.done)
		if p.err = CheckName(name); p.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, prefetchTimeout)
		defer cancel()
		p.inst, p.err = r.cfg.Backend.Lookup(ctx, name)
		p.at = r.cfg.Clock.Now()
	}
}

// lookup resolves name for Attach: from p when it names the same instance
// and found it running at most prefetchTTL ago (waiting for it when it is
// still under way), else from the backend. A prefetch that failed is not
// trusted either way: the backend is asked again, so the client sees the
// answer of the moment.
func (r *Registry) lookup(ctx context.Context, name string, p *Prefetch) (Instance, error) {
	if p != nil && p.name == name {
		select {
		case <-p.done:
		case <-ctx.Done():
			return Instance{}, ctx.Err()
		}
		if p.err == nil && r.cfg.Clock.Since(p.at) <= prefetchTTL {
			return p.inst, nil
		}
	}
	return r.cfg.Backend.Lookup(ctx, name)
}
