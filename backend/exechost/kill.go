package exechost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/internal/names"
	"github.com/termgate/termgate/sessions"
)

// instKey names a kill lane (procmark.Grouper): one kill exec at a time
// per instance, and what runKill needs to reach it.
type instKey struct{ name, id string }

func killKey(inst sessions.Instance) instKey { return instKey{inst.Name, inst.ID} }

// KillsWaiting says how many markers wait for a kill exec in inst, and
// whether a kill runs there (tests).
func (h *Host) KillsWaiting(inst sessions.Instance) (markers int, busy bool) {
	return h.kills.Waiting(killKey(inst))
}

// KillsBusy reports whether any kill runs (tests).
func (h *Host) KillsBusy() bool { return h.kills.Busy() }

// waitEnded checks that the exec ends after the kill, for at most two
// seconds. An instance deleted meanwhile may leave its stream open but
// silent (kubernetes/kubernetes#129144): that is no failure.
func (p *Shell) waitEnded(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := p.s.Wait(wctx)
	switch {
	case err == nil || errors.Is(err, ErrNoStatus):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case p.h.gone(ctx, p.inst):
		return nil
	case wctx.Err() != nil:
		return errors.New("the shell still runs after SIGKILL (did it change user?)")
	}
	return err
}

// runKill is the Grouper's RunFunc: procmark.KillScript in the instance
// for modes (markers, or --prefix=, --all, --orphans). The script is told
// every directory a holder may run from: what runs below a live holder
// there is the holder's to end, and TERMGATE_HELD=1 means nothing anywhere
// else. An instance that is gone has nothing left to kill: that is not an
// error. A backend that cannot be reached is: the processes may well live
// on.
func (h *Host) runKill(ctx context.Context, key instKey, modes []string) ([]procmark.Ended, error) {
	inst := sessions.Instance{Name: key.name, ID: key.id}
	shell, err := h.hasShell(ctx, inst)
	if err != nil {
		return nil, h.killFailed(ctx, inst, err)
	}
	if !shell {
		return h.runKillNoShell(ctx, inst, modes)
	}
	argv := []string{"/bin/sh", "-c", procmark.KillScript, "termgate-kill"}
	for _, dir := range HolderDirs {
		argv = append(argv, procmark.HolderDirArg(dir))
	}
	argv = append(argv, modes...)
	procs, code, stderr, err := h.execKill(ctx, inst, argv)
	if err == nil && code != 0 {
		err = fmt.Errorf("kill script exited with status %d: %s", code, stderr)
	}
	if err != nil {
		return procs, h.killFailed(ctx, inst, err)
	}
	return procs, nil
}

// execKill runs a kill exec (the script, or the holder's kill) and reads
// what it ended, its exit status and its stderr (trimmed, bounded).
func (h *Host) execKill(ctx context.Context, inst sessions.Instance, argv []string) (procs []procmark.Ended, code int, stderr string, err error) {
	s, err := h.x.Exec(ctx, inst, argv, ExecOptions{})
	if err != nil {
		return nil, 0, "", err
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	var stdout bytes.Buffer
	_, rerr := io.Copy(&limitWriter{w: &stdout, n: 1 << 20}, s)
	stop()
	if ctx.Err() != nil {
		_ = s.Close()
		return nil, 0, "", fmt.Errorf("kill exec: %w", ctx.Err())
	}
	procs = procmark.ParseEnded(stdout.String())
	code, err = s.Wait(ctx)
	_ = s.Close()
	if err == nil && rerr != nil {
		err = fmt.Errorf("read kill exec output: %w", rerr)
	}
	stderr = strings.TrimSpace(s.Stderr())
	if len(stderr) > 512 {
		stderr = stderr[:512] + "..."
	}
	return procs, code, stderr, err
}

// endHolderless ends what is left of session, whose holder in dir died:
// its shell went with the holder, but the jobs it started (nohup, setsid)
// run on with the session's marker, which no holder is above now, so the
// kill script reaches them (it spares only what runs below a live holder).
// The cause is sessions.ErrHolderDied either way: a kill that failed is
// logged, and the next sweep ends what it left (procmark.Orphans).
func (h *Host) endHolderless(ctx context.Context, inst sessions.Instance, dir, session, why string) error {
	// The session ID came from the holder: a marker only if it is one.
	if !names.ValidSessionID(session) {
		h.log.Warn(h.name+": the holder died; its session id is no marker, its jobs are left to the next sweep",
			"instance", inst.Name, "dir", dir, "why", why)
		return sessions.ErrHolderDied
	}
	procs, err := h.kills.Kill(ctx, killKey(inst), session)
	_, pids := procmark.Summary(procs)
	if err != nil {
		h.log.Warn(h.name+": the holder died; ending its session's jobs failed (the next sweep retries)",
			"instance", inst.Name, "dir", dir, "session", session, "why", why, "err", err, "processes", pids)
		return sessions.ErrHolderDied
	}
	h.log.Warn(h.name+": the holder died; ended its session's jobs",
		"instance", inst.Name, "dir", dir, "session", session, "why", why, "processes", pids)
	return sessions.ErrHolderDied
}

// endOrphans ends the held jobs no live holder is above in inst, before a
// new session starts there: Adopt found a holder's socket with no holder
// behind it, so a holder died there while no gateway held a connection to
// it (with one, lost() ends its jobs). A failure is logged: the next sweep
// tries again.
func (h *Host) endOrphans(ctx context.Context, inst sessions.Instance) {
	procs, err := h.runKill(ctx, killKey(inst), []string{procmark.Orphans})
	_, pids := procmark.Summary(procs)
	switch {
	case err != nil:
		h.log.Warn(h.name+": ending the jobs of a holder that died failed (the next sweep retries)",
			"instance", inst.Name, "err", err)
	case len(procs) > 0:
		h.log.Info(h.name+": ended the jobs of a holder that died", "instance", inst.Name, "processes", pids)
	}
}

// killFailed is nil when the instance is gone (nothing left to kill),
// else err, or why the kill cannot run.
func (h *Host) killFailed(ctx context.Context, inst sessions.Instance, err error) error {
	st, serr := h.x.State(ctx, inst)
	switch {
	case serr != nil:
		return serr
	case st == Gone:
		return nil
	case st == Paused:
		return errors.New("the instance is paused; its shells could not be killed")
	}
	return err
}

// sweepMode is what Sweep ends: this gateway's shells when it has an id.
func (h *Host) sweepMode() string {
	if h.gatewayID == "" {
		return procmark.AllSessions
	}
	return procmark.PrefixMode(h.gatewayID + ".")
}

// Sweep ends the marked shells (and their sessions' processes) in every
// running instance at once (a starting gateway uses StartUp, which does it
// in the background): with the exec streams of an earlier gateway run gone,
// nothing else would ever end them. It ends the jobs of holders that died
// meanwhile too (procmark.Orphans): whoever started such a holder, its
// session is over, and no gateway could reach them otherwise.
func (h *Host) Sweep(ctx context.Context) error {
	list, err := h.x.Instances(ctx)
	if err != nil {
		return err
	}
	return h.each(list, func(inst sessions.Instance) error {
		if _, err := h.SweepInstance(ctx, inst); err != nil {
			return fmt.Errorf("sweep %q: %w", inst.Name, err)
		}
		return nil
	})
}

// each runs f for every instance, SweepWorkers at a time, and joins the
// errors.
func (h *Host) each(list []sessions.Instance, f func(sessions.Instance) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, h.workers)
	)
	for _, inst := range list {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(inst); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// limitWriter keeps the first n bytes and discards the rest.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		l.n -= k
		l.w.Write(p[:k])
	}
	return len(p), nil
}
