package sessions

import "context"

// Lookup resolves a running instance by name for what runs beside its
// session (commands, file transfers, forwarded connections: package
// remote): the name is checked first, then the backend's Lookup, with its
// refusals (the gateway's own container, a missing label, ErrNotFound,
// ErrPaused).
func (r *Registry) Lookup(ctx context.Context, name string) (Instance, error) {
	if err := CheckName(name); err != nil {
		return Instance{}, err
	}
	return r.cfg.Backend.Lookup(ctx, name)
}
