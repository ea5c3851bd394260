package exechost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/termgate/termgate/sessions"
)

// relistenWait bounds how long a start waits for a holder that holds its
// lock but does not answer on its socket: one puts a deleted socket back
// within a second (holder's relisten.go).
const relistenWait = 3 * time.Second

// heldStartFailed handles a start whose handshake failed. When the start
// found a live holder ("already held": it holds the lock) that does not
// answer on its socket, the socket was deleted under it (a tmp cleaner:
// issue 20, D3). That is not "not held": the registry would then start
// again, into the same lock, and an attach would go round without an
// answer. So the start waits (relistenWait at most) for the holder to
// listen again and connects to it, else fails saying why.
func (h *Host) heldStartFailed(ctx context.Context, inst sessions.Instance, outcome serveOutcome, dir, name string, err error) (sessions.Process, error) {
	if outcome != serveHeld || !errors.Is(err, sessions.ErrNotHeld) {
		return nil, fmt.Errorf("start a held session in %q: %w", inst.Name, err)
	}
	sock := SocketFor(dir, name)
	t := time.NewTimer(relistenWait)
	defer t.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			waiting = false
			continue
		case <-t.C:
			waiting = false
		case <-tick.C:
		}
		if have, err := h.x.Exists(ctx, inst, []string{sock}); err != nil || !have[0] {
			continue
		}
		p, err := h.connect(ctx, inst, dir, name)
		if err == nil {
			h.log.Info(h.name+": the holder listens on its socket again after it was deleted", "instance", inst.Name, "socket", sock)
			return p, nil
		}
		if !errors.Is(err, sessions.ErrNotHeld) {
			return nil, fmt.Errorf("start a held session in %q: %w", inst.Name, err)
		}
	}
	return nil, staleHolderErr(inst, sock)
}

// staleHolderErr says that a holder holds sock's lock but does not answer.
func staleHolderErr(inst sessions.Instance, sock string) error {
	return fmt.Errorf("start a held session in %q: a holder holds %s but does not answer on it (the socket was deleted inside the instance?); an older holder build does not listen again: reset or stop the instance, or wait for its idle timeout", inst.Name, sock)
}
