package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"

	"github.com/termgate/termgate/sessions"
)

var _ sessions.Adopter = (*Backend)(nil)

// Adopt connects to the session the instance's holder holds. Without a
// live holder the error wraps sessions.ErrNotHeld; a holder of another
// protocol version gives a *holder.VersionError and is left alone. A
// Backend without Config.Durable holds nothing.
func (b *Backend) Adopt(ctx context.Context, inst sessions.Instance) (sessions.HeldProcess, error) {
	if b.held == nil {
		return nil, fmt.Errorf("instance %q: durable sessions are off: %w", inst.Name, sessions.ErrNotHeld)
	}
	if inst.ID == "" {
		return nil, fmt.Errorf("adopt in %q: empty container id: %w", inst.Name, sessions.ErrNotFound)
	}
	dirs, err := b.holderSockets(ctx, inst.ID)
	if err != nil {
		return nil, fmt.Errorf("adopt in %q: %w", inst.Name, err)
	}
	var stale error
	for _, dir := range dirs {
		p, err := b.connect(ctx, inst, dir)
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
		return nil, stale
	}
	return nil, fmt.Errorf("instance %q: %w", inst.Name, sessions.ErrNotHeld)
}

// holderSockets returns the holder directories whose socket exists, in
// holderDirs order (one Engine API stat per directory).
func (b *Backend) holderSockets(ctx context.Context, containerID string) ([]string, error) {
	var dirs []string
	for _, dir := range holderDirs {
		ok, err := b.exists(ctx, containerID, socketIn(dir))
		if err != nil {
			return nil, err
		}
		if ok {
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

// HeldInstances lists the running instances with a holder's socket (a
// holder that died by SIGKILL leaves one behind: Adopt then says
// ErrNotHeld). Paused containers are skipped.
func (b *Backend) HeldInstances(ctx context.Context) ([]sessions.Instance, error) {
	if b.held == nil {
		return nil, nil
	}
	list, err := b.cli.ContainerList(ctx, container.ListOptions{Filters: b.listFilters()})
	if err != nil {
		return nil, b.engineErr("list containers", err)
	}
	var (
		mu   sync.Mutex
		out  []sessions.Instance
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	for _, c := range list {
		if b.isSelf(c.ID) || len(c.Names) == 0 || c.State == "paused" {
			continue
		}
		name := strings.TrimPrefix(c.Names[0], "/")
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dirs, err := b.holderSockets(ctx, c.ID)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("instance %q: %w", name, err))
			case len(dirs) > 0:
				out = append(out, sessions.Instance{Name: name, ID: c.ID})
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
