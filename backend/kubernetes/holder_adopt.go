package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

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
	t, err := parseID(inst)
	if err != nil {
		return nil, err
	}
	dirs, err := b.holderSockets(ctx, t, holderDirs)
	if err != nil {
		if b.gone(context.WithoutCancel(ctx), t) {
			return nil, fmt.Errorf("adopt in %q: %w: %w", inst.Name, sessions.ErrNotFound, err)
		}
		return nil, fmt.Errorf("adopt in %q: %w", inst.Name, err)
	}
	var stale error
	for _, dir := range dirs {
		p, err := b.connect(ctx, inst, t, dir)
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

// holderSockets returns those of dirs where a holder's socket exists (one
// exec of listScript). A container without /bin/sh can host no holder:
// none.
func (b *Backend) holderSockets(ctx context.Context, t target, dirs []string) ([]string, error) {
	ex, err := b.executor(t, []string{"/bin/sh", "-c", listScript, "termgate-list", strings.Join(dirs, " ")}, false)
	if err != nil {
		return nil, err
	}
	var stdout, stderr lockedBuffer
	stdout.n, stderr.n = 4<<10, 4<<10
	code, err := exitCode(ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("list holders in %q: %w", t.pod, ctx.Err())
	case err != nil && noShell(err):
		return nil, nil
	case err != nil:
		return nil, b.execErr(t, err)
	case code != 0:
		return nil, nil // no usable shell (126, 127): no holder either
	}
	return strings.Fields(stdout.String()), nil
}

// noShell: the exec failed because the container has no /bin/sh to run.
func noShell(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "no such file or directory") || strings.Contains(msg, "executable file not found")
}

// HeldInstances lists the running instances with a holder's socket (a
// holder that died by SIGKILL leaves one behind: Adopt then says
// ErrNotHeld).
func (b *Backend) HeldInstances(ctx context.Context) ([]sessions.Instance, error) {
	if b.held == nil {
		return nil, nil
	}
	list, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		out  []sessions.Instance
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	for _, inst := range list {
		t, err := parseID(inst)
		if err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dirs, err := b.holderSockets(ctx, t, holderDirs)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("instance %q: %w", inst.Name, err))
			case len(dirs) > 0:
				out = append(out, inst)
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// deleting reports whether the target's pod is being deleted (its
// containers get SIGTERM: a shell killed now went with the pod).
func (b *Backend) deleting(ctx context.Context, t target) bool {
	pod, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, t.pod, metav1.GetOptions{})
	return err == nil && string(pod.UID) == t.uid && pod.DeletionTimestamp != nil
}
