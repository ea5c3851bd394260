package exechost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/termgate/termgate/sessions"
)

// Adopt connects to the session name ("" the default one) that its holder
// holds in the instance (each session has its own socket: SocketFor). Without a
// live holder of this deployment the error wraps sessions.ErrNotHeld (and
// ErrForeign when another deployment's holds one: left alone); a holder of
// another protocol version gives a *holder.VersionError and is left alone.
// A Host that is not durable holds nothing.
func (h *Host) Adopt(ctx context.Context, inst sessions.Instance, name string) (sessions.HeldProcess, error) {
	if h.held == nil {
		return nil, fmt.Errorf("instance %q: durable sessions are off: %w", inst.Name, sessions.ErrNotHeld)
	}
	if inst.ID == "" {
		return nil, fmt.Errorf("adopt in %q: empty instance id: %w", inst.Name, sessions.ErrNotFound)
	}
	// An earlier run's shells go first: adopting leads to a start when
	// nothing is held.
	if err := h.waitSwept(ctx, inst); err != nil {
		return nil, err
	}
	dirs, err := h.holderSockets(ctx, inst, name)
	if err != nil {
		if h.gone(context.WithoutCancel(ctx), inst) {
			return nil, fmt.Errorf("adopt in %q: %w: %w", inst.Name, sessions.ErrNotFound, err)
		}
		return nil, fmt.Errorf("adopt in %q: %w", inst.Name, err)
	}
	var stale, foreign error
	for _, dir := range h.foreignLast(inst, dirs) {
		p, err := h.connect(ctx, inst, dir, name)
		if errors.Is(err, ErrForeign) {
			foreign = err
			continue
		}
		if errors.Is(err, sessions.ErrNotHeld) {
			stale = err
			continue
		}
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	if stale != nil {
		// A holder died here: its jobs go before a new session starts
		// (a live holder's, another deployment's too, are left alone).
		h.endOrphans(ctx, inst)
	}
	if foreign != nil {
		return nil, foreign
	}
	if stale != nil {
		return nil, stale
	}
	return nil, fmt.Errorf("instance %q: %w", inst.Name, sessions.ErrNotHeld)
}

// holderSockets returns the HolderDirs where the socket of the session
// name exists, in order.
func (h *Host) holderSockets(ctx context.Context, inst sessions.Instance, name string) ([]string, error) {
	paths := make([]string, len(HolderDirs))
	for i, dir := range HolderDirs {
		paths[i] = SocketFor(dir, name)
	}
	have, err := h.x.Exists(ctx, inst, paths)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for i, dir := range HolderDirs {
		if have[i] {
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

// HeldSessions lists the default sessions of the running instances with a
// holder's socket (a holder that died by SIGKILL leaves one behind, and
// another deployment's holder has one too: Adopt then says ErrNotHeld,
// which AdoptAll counts as nothing). Telling the holders apart takes a
// connection to each, so only the directories an Adopt already found
// another deployment's are left out. A named session's holder is not
// listed (finding its socket would take a directory listing in the
// instance, which may have no tools): it is adopted at its first attach,
// or reset; one holder per instance (issue 36 item 4) will
// list them all.
func (h *Host) HeldSessions(ctx context.Context) ([]sessions.HeldSession, error) {
	if h.held == nil {
		return nil, nil
	}
	list, err := h.x.Instances(ctx)
	if err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex
		out []sessions.HeldSession
	)
	err = h.each(list, func(inst sessions.Instance) error {
		held, err := h.holds(ctx, inst)
		if err != nil {
			return fmt.Errorf("instance %q: %w", inst.Name, err)
		}
		if held {
			mu.Lock()
			out = append(out, sessions.HeldSession{Instance: inst})
			mu.Unlock()
		}
		return nil
	})
	return out, err
}
