package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cost is the per-session cost between two samples.
func cost(base, loaded sample, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f KiB RSS, %.1f goroutines, %.2f threads, %.1f descriptors per session",
		float64(loaded.RSSKiB-base.RSSKiB)/float64(n), float64(loaded.Goroutines-base.Goroutines)/float64(n),
		float64(loaded.Threads-base.Threads)/float64(n), float64(loaded.FDs-base.FDs)/float64(n))
}

// drainer reads a client until its connection ends and remembers what it
// was told.
type drainer struct {
	t     term
	done  chan struct{}
	ended time.Time
	told  string
	err   error
}

func drain(t term) *drainer {
	d := &drainer{t: t, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		buf := make([]byte, 32<<10)
		for {
			if _, err := t.Read(buf); err != nil {
				d.ended, d.err = time.Now(), err
				break
			}
		}
		switch c := t.(type) {
		case *sshTerm:
			d.told = c.told()
		case *wsTerm:
			if n := len(c.events); n > 1 {
				d.told = c.events[n-1].Type + " " + c.events[n-1].Message
			}
			if d.told == "" && d.err != nil && strings.Contains(d.err.Error(), "close 10") {
				d.told = d.err.Error()
			}
		}
	}()
	return d
}

// caseSigtermDocker gives a gateway DockerSessions idle sessions (their
// cost is measured), then Streamers clients reading steady output, and
// sends SIGTERM: exit within 10 s with status 0, every client told and
// disconnected, no marked process left in any container.
func caseSigtermDocker(ctx context.Context, r *runner, res *result) {
	g, err := r.e.newGateway("sigterm", r.e.main)
	if !res.check(err, "prepare a gateway") {
		return
	}
	if !res.check(g.start(ctx), "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "term", r.cfg.DockerSessions)
	if !res.check(err, "start containers") {
		return
	}
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}
	for _, inst := range names {
		if !res.check(r.touch(ctx, g, inst), "create a session") {
			return
		}
	}
	time.Sleep(500 * time.Millisecond)
	idle, err := g.sample(ctx)
	if !res.check(err, "sample") {
		return
	}
	res.After = &idle
	res.notef("Docker, %d idle sessions: %s", len(names), cost(base, idle, len(names)))

	var ds []*drainer
	defer func() {
		for _, d := range ds {
			_ = d.t.Leave(closeRST)
			<-d.done
		}
	}()
	for i := range r.cfg.Streamers {
		inst := names[i%len(names)]
		var t term
		if i%2 == 0 {
			t, err = g.attachSSH(ctx, i/2, inst)
		} else {
			t, err = g.attachWS(ctx, inst)
		}
		if !res.check(err, "attach a streaming client") {
			return
		}
		if i < len(names) {
			if _, err := command(t, "while :; do echo soak-stream-line-0123456789; usleep 2000; done &", 20*time.Second); !res.check(err, "start the output") {
				_ = t.Leave(closeRST)
				return
			}
		}
		ds = append(ds, drain(t))
	}
	time.Sleep(time.Second)
	took := r.sigtermClean(ctx, g, r.e.main, names, res)
	told := 0
	var untold []string
	for _, d := range ds {
		select {
		case <-d.done:
			if d.told != "" {
				told++
			} else if len(untold) < 3 {
				untold = append(untold, fmt.Sprintf("%s (%v)", d.t.Via(), d.err))
			}
		case <-time.After(5 * time.Second):
			res.failf("a %s client was still connected 5s after the gateway exited", d.t.Via())
		}
	}
	res.notef("SIGTERM with %d sessions and %d streaming clients: exit after %s; %d of %d clients got a notice",
		len(names), len(ds), took.Round(time.Millisecond), told, len(ds))
	if len(untold) > 0 {
		res.notef("not told, e.g.: %s", strings.Join(untold, "; "))
	}
	res.Shells = "0 (after exit)"
}

// caseSigtermLocal gives a local-backend gateway LocalSessions sessions
// (half with a background job), measures their cost and sends SIGTERM:
// exit within 10 s with status 0 and no process of theirs left on the host.
func caseSigtermLocal(ctx context.Context, r *runner, res *result) {
	g, err := r.e.newGateway("local", nil)
	if !res.check(err, "prepare a gateway") {
		return
	}
	if !res.check(g.start(ctx), "start the gateway") {
		return
	}
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}
	n := r.cfg.LocalSessions
	var wg sync.WaitGroup
	var mu sync.Mutex // guards errs
	var errs []error
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				err := func() error {
					t, err := g.attachWS(ctx, "soak-l-"+strconv.Itoa(i))
					if err != nil {
						return err
					}
					cmd := ""
					if i%2 == 0 {
						cmd = "sleep 4300 &"
					}
					_, err = command(t, cmd, 30*time.Second)
					return errors.Join(err, t.Leave(closeClean))
				}()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		res.failf("%d of %d sessions failed, e.g. %v", len(errs), n, errs[0])
	}
	created := time.Since(start)
	deadline := time.Now().Add(settleWait)
	for {
		list, err := g.sessions(ctx)
		idle := 0
		for _, s := range list {
			if s.Clients == 0 {
				idle++
			}
		}
		if err == nil && idle == len(list) && len(list) == n-len(errs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	loaded, err := g.sample(ctx)
	if !res.check(err, "sample") {
		return
	}
	res.After = &loaded
	procs := localLeftovers(r.e.runID, r.e.bin)
	res.notef("local, %d sessions (created in %s): %s; %d processes of theirs on the host",
		n, created.Round(time.Millisecond), cost(base, loaded, n), len(procs))
	took := r.sigtermClean(ctx, g, nil, nil, res)
	res.notef("SIGTERM with %d local sessions: exit after %s", n, took.Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	left := localLeftovers(r.e.runID, r.e.bin)
	res.Shells = fmt.Sprintf("%d left on the host", len(left))
	if len(left) > 0 {
		res.failf("%d of the sessions' processes left on the host after the gateway exited, e.g. %s", len(left), left[0])
		killLeftovers(r.e.runID, r.e.bin)
	}
}

// killLeftovers SIGKILLs this run's processes left on the host (children of
// a gateway this run started).
func killLeftovers(runID, bin string) {
	for range 3 {
		left := localLeftovers(runID, bin)
		if len(left) == 0 {
			return
		}
		for _, l := range left {
			if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}
