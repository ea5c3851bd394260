package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Bounds of the scale and fan-out phases.
const (
	maxFanout = 120  // half are WebSocket clients: the gateway takes 64 HTTP connections per address
	maxScale  = 5000 // each client is a connection on both sides: mind ulimit -n
	// scaleDials is how many SSH handshakes the scale phase runs at once:
	// the gateway closes an address's unauthenticated connections beyond
	// 10 (sshd.Config.MaxPreAuthPerIP).
	scaleDials = 8
	// scaleIdle is how long the attached clients sit idle while the
	// gateway's CPU time is measured.
	scaleIdle = 5 * time.Second
)

var scaleMetrics = []string{"scale_attach_all", "scale_attach_p50", "scale_attach_p99", "scale_mem", "scale_idle_cpu", "scale_broadcast_p50", "scale_broadcast_max"}

func scalePath(cfg *config) string { return fmt.Sprintf("%d ssh clients", cfg.scale) }

// scale attaches cfg.scale SSH clients at once, spread over the two
// benchmark sessions (each of its own key's share, see signerFor), and
// measures what holding them costs the gateway: the time to attach them
// all, each attach's time to its first output (the replay), the gateway's
// resident memory per client, its CPU while they sit idle, and how long a
// command's output takes to reach every client of its session.
func scale(ctx context.Context, e *env, cfg *config, rep *Report) {
	path := scalePath(cfg)
	failAll := func(err error) {
		for _, m := range scaleMetrics {
			rep.fail(m, path, err)
		}
	}
	pid := e.gw.PID()
	rss0, err := procRSS(pid)
	if err != nil {
		failAll(err)
		return
	}
	clients := make([]*shell, cfg.scale)
	defer closeAll(clients)
	attach := make([]float64, cfg.scale)
	errs := make([]error, cfg.scale)
	next := make(chan int)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range min(scaleDials, cfg.scale) {
		wg.Go(func() {
			for i := range next {
				dctx, cancel := context.WithTimeout(ctx, dialTimeout)
				t1 := time.Now()
				t, err := dialSSHAs(dctx, e, e.instance(i%2), i)
				cancel()
				if err != nil {
					errs[i] = fmt.Errorf("client %d: %w", i+1, cause(ctx, err))
					continue
				}
				s := newShell(ctx, t, pathSSH)
				clients[i] = s
				s.bound(dialTimeout)
				if n, err := s.Read(s.buf); n == 0 {
					errs[i] = fmt.Errorf("client %d: no output after attaching: %w", i+1, err)
					continue
				}
				_ = s.SetDeadline(time.Time{})
				attach[i] = float64(time.Since(t1).Microseconds()) / 1e3
			}
		})
	}
	for i := 0; i < cfg.scale && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	all := time.Since(t0)
	if err := errors.Join(append(errs, context.Cause(ctx))...); err != nil {
		failAll(err)
		return
	}
	rss1, err := procRSS(pid)
	if err != nil {
		failAll(err)
		return
	}
	cpu0, err := procCPU(pid)
	if err != nil {
		failAll(err)
		return
	}
	select {
	case <-time.After(scaleIdle):
	case <-ctx.Done():
		failAll(context.Cause(ctx))
		return
	}
	cpu1, err := procCPU(pid)
	if err != nil {
		failAll(err)
		return
	}
	reach, err := broadcast(clients, 30*time.Second)
	if err != nil {
		failAll(cause(ctx, err))
		return
	}
	note := fmt.Sprintf("%d SSH clients over 2 sessions, %d handshakes at a time", cfg.scale, scaleDials)
	rep.add("scale_attach_all", path, all.Seconds(), nil, note, nil)
	rep.add("scale_attach_p50", path, percentile(attach, 50), nil, "each attach to its first output (the replay)", nil)
	rep.add("scale_attach_p99", path, percentile(attach, 99), nil, fmt.Sprintf("max %.1f ms", percentile(attach, 100)), nil)
	rep.add("scale_mem", path, float64(rss1-rss0)/1024/float64(cfg.scale), nil,
		fmt.Sprintf("gateway RSS %d MiB before, %d MiB with the clients attached", rss0>>20, rss1>>20), nil)
	rep.add("scale_idle_cpu", path, 100*(cpu1-cpu0).Seconds()/scaleIdle.Seconds(), nil, fmt.Sprintf("%% of one CPU over %s with every client attached and no output", scaleIdle), nil)
	rep.add("scale_broadcast_p50", path, percentile(reach, 50), nil, "from typing a command in each session to each of its clients reading the output", nil)
	rep.add("scale_broadcast_max", path, percentile(reach, 100), nil, "", nil)
}

// broadcast has the first client of each of the two sessions run a
// command and returns, for every client, the milliseconds from sending it
// to reading its output (its end marker).
func broadcast(clients []*shell, timeout time.Duration) ([]float64, error) {
	reach := make([]float64, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for inst := range min(2, len(clients)) {
		for i := inst; i < len(clients); i += 2 {
			clients[i].bound(timeout)
		}
		t0 := time.Now()
		m, err := clients[inst].send("", "END")
		if err != nil {
			return nil, err
		}
		for i := inst; i < len(clients); i += 2 {
			wg.Go(func() {
				if _, err := clients[i].readUntil(m); err != nil {
					errs[i] = fmt.Errorf("client %d: %w", i+1, err)
					return
				}
				reach[i] = float64(time.Since(t0).Microseconds()) / 1e3
			})
		}
	}
	wg.Wait()
	return reach, errors.Join(errs...)
}

// closeAll closes the clients that were opened, a few at a time.
func closeAll(clients []*shell) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, c := range clients {
		if c == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.Close()
		})
	}
	wg.Wait()
}
