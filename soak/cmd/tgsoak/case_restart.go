package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// caseRestartAtScale gives a gateway RestartInstances containers with one
// session each, kills it with -9 and starts it again on the same state
// (contract, "Build and run": start-up; stress round 4, D1/D2): it must
// listen within 2 s, end every old shell in the background, and an attach
// made at once lands in exactly one shell. It reports the time to listen,
// the time until no old shell is left, and the sweep's own figure.
func caseRestartAtScale(ctx context.Context, r *runner, res *result) {
	n := r.cfg.RestartInstances
	g, err := r.e.newGateway("rscale", r.e.main)
	if !res.check(err, "prepare a gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "rscale", n)
	if !res.check(err, "start containers") {
		return
	}
	if !res.check(g.start(ctx), "start the gateway") {
		return
	}
	if !res.check(each(ctx, names, 8, func(inst string) error {
		t, err := g.attachWS(ctx, inst)
		if err != nil {
			return err
		}
		_, err = command(t, ":", 60*time.Second)
		_ = t.Leave(closeClean) // detached: the session and its shell stay
		return err
	}), "one session in each container") {
		return
	}
	probe := names[len(names)-1] // listed last: likely not swept yet when attached
	before, err := r.e.main.waitCensus(ctx, probe, settleWait, func(c census) bool { return c.Sessions == 1 })
	if !res.check(err, "the probe container's session") {
		return
	}
	oldMark := before.Procs[0].Mark

	g.kill9()
	load := loadAvg()
	start := time.Now()
	if !res.check(g.start(ctx), "restart the gateway") {
		return
	}
	listening := time.Since(start)
	if listening > 2*time.Second {
		res.failf("listening %s after the restart with %d instances; the contract says within 2 s", listening.Round(time.Millisecond), n)
	}

	// At once, while the sweep runs: exactly one shell, the new one.
	t, err := g.attachWS(ctx, probe)
	if res.check(err, "attach during the sweep") {
		_, err = command(t, ":", 60*time.Second)
		res.check(err, "a command in the shell attached during the sweep")
		c, err := r.e.main.waitCensus(ctx, probe, settleWait, func(c census) bool {
			return c.Sessions == 1 && c.Procs[0].Mark != oldMark
		})
		res.check(err, "one shell, the new one, in the container attached during the sweep")
		if c.Sessions > 1 {
			res.failf("%s: %d sessions' shells after an attach during the sweep: %s", probe, c.Sessions, c)
		}
		_ = t.Leave(closeClean)
	}

	// Until no old shell is left anywhere (the probe keeps its new one).
	bound := 2 * time.Minute
	if !r.cfg.short {
		bound = 10 * time.Minute
	}
	left := names
	for len(left) > 0 && time.Since(start) < bound && ctx.Err() == nil {
		var mu sync.Mutex
		var still []string
		_ = each(ctx, left, 8, func(inst string) error {
			ps, err := r.e.main.marked(ctx, inst)
			old := err != nil
			for _, p := range ps {
				old = old || p.Mark != "" && !(inst == probe && p.Mark != oldMark)
			}
			if old {
				mu.Lock()
				still = append(still, inst)
				mu.Unlock()
			}
			return nil
		})
		left = still
	}
	swept := time.Since(start)
	if len(left) > 0 {
		res.failf("%d of %d containers still run an old shell %s after the restart (first: %s)", len(left), n, bound, left[0])
	}

	summary, long, lines := sweepSummary(g)
	if lines != 1 {
		res.failf("%d start-up summary lines in the log, want 1", lines)
	}
	if long > 0 {
		res.failf("%d log lines over 4 KiB", long)
	}
	res.notef("%d instances, load %s: listening %s after the restart; no old shell left after %s (censused); the gateway's sweep: %s",
		n, load, listening.Round(time.Millisecond), swept.Round(time.Millisecond), summary)
	res.Shells = fmt.Sprintf("%d old left", len(left))
	r.sigtermClean(ctx, g, r.e.main, names, res)
}

// sweepSummary reads the start-up summary line of g's current run: its
// duration and counts, how many lines exceed 4 KiB, and how many summary
// lines there are.
func sweepSummary(g *gateway) (summary string, long, lines int) {
	for deadline := time.Now().Add(settleWait); ; time.Sleep(200 * time.Millisecond) {
		summary, long, lines = "", 0, 0
		for _, l := range g.logLines() {
			if len(l) > 4096 {
				long++
			}
			if !strings.Contains(l, "start-up sweep done") {
				continue
			}
			lines++
			var v struct {
				Instances int    `json:"instances"`
				Ended     int    `json:"processes_ended"`
				Retried   int    `json:"retried"`
				Duration  string `json:"duration"`
			}
			if json.Unmarshal([]byte(l), &v) == nil {
				summary = fmt.Sprintf("%d instances, %d processes ended, %d retried, in %s", v.Instances, v.Ended, v.Retried, v.Duration)
			}
		}
		if lines > 0 || time.Now().After(deadline) {
			return summary, long, lines
		}
	}
}

// each runs f for every name, k at a time, and joins the errors (the
// first few: hundreds of containers must not make one huge message).
func each(ctx context.Context, names []string, k int, f func(string) error) error {
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
		sem  = make(chan struct{}, k)
	)
	failed := 0
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(name); err != nil {
				mu.Lock()
				failed++
				if len(errs) < 3 {
					errs = append(errs, fmt.Sprintf("%s: %v", name, err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed > 0 {
		return fmt.Errorf("%d of %d failed: %s", failed, len(names), strings.Join(errs, "; "))
	}
	return ctx.Err()
}
