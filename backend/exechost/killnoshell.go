package exechost

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/sessions"
)

// runKillNoShell is runKill for an instance without /bin/sh (a FROM
// scratch image), where procmark.KillScript cannot run: the holder binary
// does the same (termgate-holder kill: holder.KillMarkers), uploaded and
// run as a tool is there (toolCommandNoShell: a fresh copy in a new
// private directory, never a binary found in the instance). Without it,
// what a command started in such an instance would run on after its
// client left. Where the holder cannot run either, the kill fails with
// the reason (logged by the caller).
func (h *Host) runKillNoShell(ctx context.Context, inst sessions.Instance, modes []string) ([]procmark.Ended, error) {
	if _, err := h.site.binary(); err != nil {
		return nil, fmt.Errorf("no /bin/sh for the kill script and %w", err)
	}
	if why := h.site.get(&h.site.cannot, inst.ID); why != "" {
		return nil, fmt.Errorf("no /bin/sh for the kill script and the holder cannot run: %s", why)
	}
	dirs, err := h.holderDirs(ctx, inst)
	if err != nil {
		return nil, h.killFailed(ctx, inst, err)
	}
	var why []string
	for _, dir := range dirs {
		argv, err := h.toolCommandNoShell(ctx, inst, dir, append([]string{"kill"}, modes...))
		var cannot *CannotHold
		switch {
		case errors.As(err, &cannot) || err != nil && (ctx.Err() != nil || !errors.Is(err, ErrRefused)):
			return nil, h.killFailed(ctx, inst, err)
		case err != nil:
			why = append(why, err.Error())
			continue
		}
		procs, code, stderr, err := h.execKill(ctx, inst, argv)
		switch {
		case err != nil:
			return procs, h.killFailed(ctx, inst, err)
		case code == 126 || code == 127: // noexec here: the next directory
			why = append(why, fmt.Sprintf("%s: %s", dir, stderr))
			continue
		case code != 0:
			return procs, h.killFailed(ctx, inst, fmt.Errorf("the holder's kill exited with status %d: %s", code, stderr))
		}
		h.site.set(&h.site.worked, inst.ID, dir)
		return procs, nil
	}
	return nil, h.killFailed(ctx, inst, errors.New("no /bin/sh for the kill script, and no writable directory lets the holder run: "+strings.Join(why, "; ")))
}
