package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The three reset routes.
const (
	routeSSH  = "ssh"
	routeHTTP = "http"
	routeWS   = "websocket"
)

var routes = []string{routeSSH, routeHTTP, routeWS}

// errRefused marks a reset the gateway refused on purpose (a rate limit):
// counted, not a failure.
type errRefused struct{ msg string }

func (e errRefused) Error() string { return "refused: " + e.msg }

var waitRE = regexp.MustCompile(`wait (\d+) s`)

// retryAfter is the wait the refusal names, else 2 s.
func (e errRefused) retryAfter() time.Duration {
	if m := waitRE.FindStringSubmatch(e.msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 && n < 60 {
			return time.Duration(n) * time.Second
		}
	}
	return 2 * time.Second
}

// resetVia resets inst over route and returns how long the request took
// (for the WebSocket: from the control message to the reset event). ws is
// the attached WebSocket client for the control route.
func resetVia(ctx context.Context, g *gateway, route, inst string, k int, ws *wsTerm) (time.Duration, error) {
	start := time.Now()
	switch route {
	case routeSSH:
		out, errOut, code, err := g.sshCommand(ctx, k, "soak", "reset "+inst)
		if err != nil {
			return 0, err
		}
		if code != 0 {
			if isRateLimit(errOut) {
				return 0, errRefused{strings.TrimSpace(errOut)}
			}
			return 0, fmt.Errorf("ssh reset: exit status %d, stdout %q, stderr %q", code, out, errOut)
		}
	case routeHTTP:
		status, body, err := g.request(ctx, http.MethodPost, "/api/instances/"+inst+"/terminal/reset")
		if err != nil {
			return 0, err
		}
		if status == http.StatusTooManyRequests {
			return 0, errRefused{string(body)}
		}
		if status != http.StatusOK {
			return 0, fmt.Errorf("POST reset: %d %s", status, body)
		}
	case routeWS:
		if err := ws.control(`{"type":"reset"}`); err != nil {
			return 0, err
		}
		_ = ws.c.SetReadDeadline(time.Now().Add(90 * time.Second))
		defer ws.c.SetReadDeadline(time.Time{})
		for {
			ev, err := ws.nextEvent()
			if err != nil {
				return 0, fmt.Errorf("websocket reset: no reset event: %w", err)
			}
			if ev.Type == "reset" {
				break
			}
			if ev.Type == "error" {
				if isRateLimit(ev.Message) {
					return 0, errRefused{ev.Message}
				}
				return 0, fmt.Errorf("websocket reset: error event %q", ev.Message)
			}
		}
	}
	return time.Since(start), nil
}

func isRateLimit(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "too many") || strings.Contains(m, "rate") || strings.Contains(m, "slow down")
}

// caseResetStorm resets one session Resets times: two thirds one after the
// other, rotating the routes, with a background job started in every
// session; the rest from ResetWorkers concurrent clients. Afterwards the
// container runs exactly one shell and only the latest job.
func caseResetStorm(ctx context.Context, r *runner, res *result) {
	g, err := r.mainGateway(ctx)
	if !res.check(err, "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "reset", 1)
	if !res.check(err, "start a container") {
		return
	}
	inst := names[0]
	// The baseline has an idle session, as the end will.
	if !res.check(r.touch(ctx, g, inst), "create the session") {
		return
	}
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}
	a, err := g.attachSSH(ctx, 0, inst)
	if !res.check(err, "attach over SSH") {
		return
	}
	ap := startPump(a)
	defer ap.stop()
	defer a.Leave(closeClean)
	w, err := g.attachWS(ctx, inst)
	if !res.check(err, "attach over WebSocket") {
		return
	}
	defer w.Leave(closeClean)

	lat := map[string][]time.Duration{}
	var mu sync.Mutex // guards lat, refused, errs
	refused, errs := 0, 0
	record := func(route string, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch err.(type) {
		case nil:
			lat[route] = append(lat[route], d)
		case errRefused:
			refused++
		default:
			errs++
			if errs <= 5 {
				res.failf("reset over %s: %v", route, err)
			}
		}
	}

	seq := r.cfg.Resets * 2 / 3
	for i := 0; i < seq && ctx.Err() == nil && errs <= 10; i++ {
		// A fresh shell may discard what is typed before it has set up
		// its terminal: make sure it answers before starting its job.
		err := ap.sync(a, 20*time.Second)
		if err == nil {
			err = ap.command(a, fmt.Sprintf("sleep %d &", 1_000_000+i), 20*time.Second)
		}
		if err != nil {
			res.failf("start a job before reset %d: %v", i, err)
			return
		}
		route := routes[i%len(routes)]
		d, err := resetVia(ctx, g, route, inst, 1, w)
		record(route, d, err)
		// A reset refused by the rate limit is retried once allowed, so
		// that every one-after-the-other reset happens.
		for tries := 0; tries < 5 && ctx.Err() == nil; tries++ {
			var ref errRefused
			if !errors.As(err, &ref) {
				break
			}
			time.Sleep(ref.retryAfter())
			d, err = resetVia(ctx, g, route, inst, 1, w)
			record(route, d, err)
		}
		if err == nil && route != routeWS {
			// The WebSocket client is moved too: take its event, so that
			// the next reset over it waits for its own.
			if _, err := w.waitEvent("reset", 20*time.Second); err != nil {
				res.failf("the attached WebSocket client saw no reset event after reset %d: %v", i, err)
				return
			}
		}
		if err == nil {
			// The reset's answer may come before the attached clients are
			// moved: wait for the SSH client's notice.
			if err := ap.wait([]byte("session reset"), 20*time.Second); err != nil {
				res.failf("the attached SSH client saw no notice of reset %d: %v", i, err)
				return
			}
		}
	}

	// The concurrent part: each worker has its own WebSocket client for the
	// control route.
	var wg sync.WaitGroup
	per := max(1, (r.cfg.Resets-seq)/r.cfg.ResetWorkers)
	for wk := range r.cfg.ResetWorkers {
		wg.Go(func() {
			route := routes[wk%len(routes)]
			var ws *wsTerm
			if route == routeWS {
				var err error
				if ws, err = g.attachWS(ctx, inst); err != nil {
					record(route, 0, err)
					return
				}
				defer ws.Leave(closeClean)
			}
			for j := 0; j < per && ctx.Err() == nil; j++ {
				d, err := resetVia(ctx, g, route, inst, 1+wk, ws)
				record(route, d, err)
			}
		})
	}
	wg.Wait()

	// The latest job, in the session that survived the storm.
	const latest = 2_999_999
	err = ap.sync(a, 20*time.Second)
	if err == nil {
		err = ap.command(a, fmt.Sprintf("sleep %d &", latest), 20*time.Second)
	}
	if err != nil {
		res.failf("start the latest job: %v", err)
	}
	c, err := r.e.main.waitCensus(ctx, inst, 15*time.Second, func(c census) bool {
		return c.Shells == 1 && c.Sessions == 1 && c.count("sleep 1000") == 0 && c.count(fmt.Sprint(latest)) == 1
	})
	res.Shells = fmt.Sprint(c.Shells)
	res.check(err, "one shell and only the latest job after the storm")

	var all []time.Duration
	var parts []string
	for _, route := range routes {
		all = append(all, lat[route]...)
		if l := lat[route]; len(l) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (p50 %s)", route, len(l), pct(l, 50)))
		}
	}
	res.notef("%d resets (%s), %d concurrent from %d clients; %d refused by a rate limit, %d failed",
		len(all), strings.Join(parts, ", "), per*r.cfg.ResetWorkers, r.cfg.ResetWorkers, refused, errs)
	if len(all) > 0 {
		res.notef("reset latency p50 %s, p90 %s, p99 %s, max %s", pct(all, 50), pct(all, 90), pct(all, 99), pct(all, 100))
	}
	if len(all) == 0 {
		res.failf("no reset succeeded")
	}
	_ = a.Leave(closeClean)
	_ = w.Leave(closeClean)
	res.check(g.waitClients(ctx, inst, 0, settleWait), "all clients detached")
	r.finish(ctx, g, res, base)
}

// pct is the p-th percentile (nearest rank), rounded for the table.
func pct(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s))+0.5) - 1
	i = min(max(i, 0), len(s)-1)
	return s[i].Round(100 * time.Microsecond)
}
