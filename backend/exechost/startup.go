package exechost

import (
	"context"
	"errors"
	"slices"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/backend/startup"
	"github.com/termgate/termgate/sessions"
)

// StartUp starts a gateway run's work on the instances in the background
// (startup.Worker): each instance's sweep (SweepInstance), then, on a
// durable Host with adopt set, the adoption of the session its holder
// holds (adopt is the registry's: sessions.Registry.AdoptIn). From now on
// every shell, command and tool this Host starts in an instance waits for
// that instance's sweep alone (waitSwept), so that none runs beside an
// earlier run's shells or is ended by the sweep. stop cancels the work
// and waits for it; instances not swept by then stay closed.
func (h *Host) StartUp(ctx context.Context, adopt func(context.Context, sessions.Instance) (bool, error)) (stop func()) {
	cfg := startup.Config{Name: h.name, List: h.x.Instances, Sweep: h.SweepInstance, Workers: h.workers, Logger: h.log}
	if h.held != nil && adopt != nil {
		cfg.Adopt = func(ctx context.Context, inst sessions.Instance) (bool, error) {
			held, err := h.holds(ctx, inst)
			if err != nil || !held {
				return false, err
			}
			return adopt(ctx, inst)
		}
	}
	w := startup.Start(ctx, cfg)
	h.gate.Store(w)
	return w.Stop
}

// waitSwept returns once inst's start-up sweep is done (at once without
// StartUp, or for an instance that was not running when it began): a
// *startup.NotSweptError when that sweep failed.
func (h *Host) waitSwept(ctx context.Context, inst sessions.Instance) error {
	if w := h.gate.Load(); w != nil {
		return w.Wait(ctx, inst)
	}
	return nil
}

// SweepInstance ends the marked processes an earlier run of this gateway
// left in inst, and the jobs of holders that died there (see Sweep),
// reporting how many processes it ended.
func (h *Host) SweepInstance(ctx context.Context, inst sessions.Instance) (int, error) {
	procs, err := h.runKill(ctx, killKey(inst), []string{h.sweepMode(), procmark.Orphans})
	if cannot := (*CannotHold)(nil); errors.As(err, &cannot) && !cannot.passing {
		// No shell, and no directory lets a program of ours run (a
		// read-only root): no toolbox or holder ever ran there, so
		// nothing of ours is left to end, and a sweep that cannot run
		// must not hold every start back with "try again".
		h.log.Debug(h.name+": nothing to sweep: the instance runs none of termgate's programs", "instance", inst.Name, "reason", cannot.Why)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(procs) > 0 {
		// Debug: the Worker's summary counts them; hundreds of instances
		// must not mean hundreds of lines.
		sessionIDs, pids := procmark.Summary(procs)
		h.log.Debug(h.name+": sweep ended shells left by an earlier run",
			"instance", inst.Name, "sessions", sessionIDs, "processes", pids)
	}
	return len(procs), nil
}

// holds reports whether inst has a holder's socket that may be this
// deployment's (HeldInstances' test for one instance).
func (h *Host) holds(ctx context.Context, inst sessions.Instance) (bool, error) {
	dirs, err := h.holderSockets(ctx, inst, "")
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(dirs, func(d string) bool { return !h.knownForeign(inst, d) }), nil
}

// gatedExecutor holds every marked exec (a shell, a command, a tool: each
// carries procmark.EnvSession) until its instance's start-up sweep is
// done: the sweep ends every process marked with this gateway's id, so one
// started before it would be ended by it, or run beside the earlier run's.
// The sweep's own execs carry no marker.
type gatedExecutor struct {
	Executor
	h *Host
}

func (g gatedExecutor) Exec(ctx context.Context, inst sessions.Instance, argv []string, opts ExecOptions) (Stream, error) {
	if marked(opts.Env) {
		if err := g.h.waitSwept(ctx, inst); err != nil {
			return nil, err
		}
	}
	return g.Executor.Exec(ctx, inst, argv, opts)
}

func marked(env []string) bool {
	return slices.ContainsFunc(env, func(kv string) bool {
		return len(kv) > len(procmark.EnvSession) && kv[:len(procmark.EnvSession)+1] == procmark.EnvSession+"="
	})
}
