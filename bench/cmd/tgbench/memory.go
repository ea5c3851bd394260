package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
)

// The memory phase (issue 34 item 6, the stress report's method, part 1):
// what one idle session costs the gateway, ordinary and --durable, and
// what the holder costs inside each instance. It runs on containers and
// gateways of its own, started fresh, so that the other phases' buffers
// and heap do not blur a few megabytes of difference.
const (
	pathMemOrdinary = "docker, ordinary"
	pathMemDurable  = "docker, durable"

	maxMemSessions = 500
	// memWorkers is how many containers are created, sessions attached or
	// containers removed at once: the machine has 2 CPUs, and each new
	// session is an engine exec.
	memWorkers = 4
	// memSettleEvery and memSettleMax pace and bound the wait for the
	// gateway's numbers to stop moving (start-up, or the clients'
	// departures); memSteady samples in a row must agree.
	memSettleEvery = 250 * time.Millisecond
	memSettleMax   = 10 * time.Second
	memSteady      = 4
	memSweep       = 200 * time.Millisecond
)

var (
	memMetrics    = []string{"mem_session_rss", "mem_session_pss", "mem_session_heap"}
	holderMetrics = []string{"mem_holder_pss", "mem_holder_procs"}
)

// memPaths are the paths of the memory rows (the durable ones only with
// -durable).
func memPaths(cfg *config) []string {
	if cfg.durable {
		return []string{pathMemOrdinary, pathMemDurable}
	}
	return []string{pathMemOrdinary}
}

// memSample is the gateway's memory at one moment.
type memSample struct {
	rss, pss, heap int64 // bytes; heap is go_memstats_heap_inuse_bytes
	goroutines     int
	gcs            int64 // garbage collections finished (go_gc_duration_seconds_count)

	collectIn       time.Duration // how long collect took
	collectRequests int           // and how many requests for /metrics
}

// memory measures the gateway's memory per session: a fresh gateway on
// cfg.memSessions fresh containers, sampled once it has settled, then
// again after one session was created in each container (a WebSocket
// client attaches, reads the first output and leaves) and the numbers have
// settled; per session is the difference over N. Then the same with
// --durable on the same containers, and the holder processes in them.
func memory(ctx context.Context, cfg *config, rep *Report, logf func(string, ...any)) {
	failAll := func(err error) {
		for _, p := range memPaths(cfg) {
			for _, m := range memMetrics {
				rep.fail(m, p, err)
			}
		}
		if cfg.durable {
			for _, m := range holderMetrics {
				rep.fail(m, pathMemDurable, err)
			}
		}
	}
	t0 := time.Now()
	defer func() { logf("memory: done in %.0f s, containers removed", time.Since(t0).Seconds()) }()
	bin, err := filepath.Abs(cfg.termgate)
	if err != nil {
		failAll(err)
		return
	}
	mcfg := *cfg
	mcfg.fanout, mcfg.scale, mcfg.slowReaders = 0, 0, 0 // one client key is enough
	// No rate limit: N attaches and the polls of /metrics come from one
	// address within seconds.
	mcfg.gatewayArgs = append([]string{"--http-rate-limit", "0"}, cfg.gatewayArgs...)
	me, err := memEnv(ctx, &mcfg, logf)
	if me != nil {
		defer func() {
			if err := me.teardown(logf); err != nil {
				logf("memory phase cleanup: %v", err)
			}
		}()
	}
	if err != nil {
		failAll(err)
		return
	}
	n := cfg.memSessions
	ord, err := me.memRun(ctx, bin, false, logf)
	if err != nil {
		for _, m := range memMetrics {
			rep.fail(m, pathMemOrdinary, err)
		}
	} else {
		ord.report(rep, pathMemOrdinary, n)
	}
	if !cfg.durable {
		return
	}
	if cfg.holder != "" {
		abs, err := filepath.Abs(cfg.holder)
		if err != nil {
			failAll(err)
			return
		}
		mcfg.gatewayEnv = []string{"TERMGATE_HOLDER_BINARY=" + abs}
	}
	mcfg.gatewayArgs = append([]string{"--durable"}, mcfg.gatewayArgs...)
	me.logPath = filepath.Join(me.dir, "termgate-durable.log")
	dur, err := me.memRun(ctx, bin, true, logf)
	if err != nil {
		for _, m := range append(memMetrics, holderMetrics...) {
			rep.fail(m, pathMemDurable, err)
		}
		return
	}
	dur.report(rep, pathMemDurable, n)
	hp := fmt.Sprintf("%d holder processes in %d instances, %.1f MiB PSS in all", dur.holders, n, float64(dur.holderPSS)/(1<<20))
	if dur.holderErr != nil {
		rep.fail("mem_holder_pss", pathMemDurable, dur.holderErr)
		rep.fail("mem_holder_procs", pathMemDurable, dur.holderErr)
		return
	}
	rep.add("mem_holder_pss", pathMemDurable, float64(dur.holderPSS)/1024/float64(n), nil, hp, nil)
	rep.add("mem_holder_procs", pathMemDurable, float64(dur.holders)/float64(n), nil,
		fmt.Sprintf("per instance: %d..%d", dur.holdersMin, dur.holdersMax), nil)
}

// memEnv prepares the memory phase's run: its own label, state directory
// and cfg.memSessions containers; the gateways come later (memRun).
func memEnv(ctx context.Context, cfg *config, logf func(string, ...any)) (*env, error) {
	e := &env{cfg: cfg}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	e.runID = fmt.Sprintf("%x", id)
	if err := e.connectDocker(ctx); err != nil {
		return e, err
	}
	if err := e.makeState(); err != nil {
		return e, err
	}
	logf("memory: run %s: creating %d containers", e.runID, cfg.memSessions)
	return e, e.startMany(ctx, cfg.memSessions)
}

// startMany creates and starts n containers like startContainers,
// memWorkers at a time, within containerWait plus a second per container.
func (e *env) startMany(ctx context.Context, n int) error {
	cctx, cancel := context.WithTimeout(ctx, containerWait+time.Duration(n)*time.Second)
	defer cancel()
	init := true
	var mu sync.Mutex
	err := forEach(cctx, n, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("tgbench-%s-m%03d", e.runID, i)
		_, err := e.docker.ContainerCreate(ctx,
			&container.Config{Image: e.cfg.image, Labels: map[string]string{labelKey: e.runID}},
			&container.HostConfig{Init: &init, NetworkMode: "none"},
			nil, nil, name)
		if err != nil {
			return fmt.Errorf("create container %s: %w", name, err)
		}
		mu.Lock()
		e.containers = append(e.containers, name)
		mu.Unlock()
		if err := e.docker.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
			return fmt.Errorf("start container %s: %w", name, err)
		}
		return nil
	})
	return cause(cctx, err)
}

// forEach runs f for 0..n-1, memWorkers at a time, and returns the first
// error; after one, the items not yet started are skipped.
func forEach(ctx context.Context, n int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(memWorkers, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// memResult is one gateway's run of the memory phase.
type memResult struct {
	before, after memSample
	settledIn     time.Duration // until the clients had left and the goroutines stood still
	holders       int           // holder processes in all the instances (durable)
	holdersMin    int           // in the instance with the fewest
	holdersMax    int           // in the instance with the most
	holderPSS     int64         // bytes, all of them
	holderErr     error
	createdIn     time.Duration
}

// memRun starts the gateway (with --durable when durable), samples it
// settled, creates one session per container, waits for every client to
// have left and the numbers to settle, samples again, counts the holders
// (durable) and stops the gateway.
func (e *env) memRun(ctx context.Context, bin string, durable bool, logf func(string, ...any)) (r memResult, err error) {
	kind := "an ordinary"
	if durable {
		kind = "a --durable"
	}
	logf("memory: %s gateway, %d sessions", kind, len(e.containers))
	if err := e.startGateway(ctx, bin); err != nil {
		return r, err
	}
	defer func() {
		if serr := e.stopGateway(); serr != nil && err == nil {
			err = serr
		}
	}()
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	// At start: no session yet, the start-up sweep of the containers done.
	r.before, _, err = e.settle(ctx, hc, 0)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	err = forEach(ctx, len(e.containers), func(ctx context.Context, i int) error {
		return e.touch(ctx, e.containers[i])
	})
	if err != nil {
		return r, cause(ctx, err)
	}
	r.createdIn = time.Since(t0)
	r.after, r.settledIn, err = e.settle(ctx, hc, len(e.containers))
	if err != nil {
		return r, err
	}
	logf("  created in %.1f s, settled in %.1f s, two GCs in %.1f s", r.createdIn.Seconds(), r.settledIn.Seconds(), r.after.collectIn.Seconds())
	if durable {
		r.holders, r.holdersMin, r.holdersMax, r.holderPSS, r.holderErr = e.holderCensus(ctx)
	}
	return r, nil
}

// touch creates the session of one instance: a WebSocket client with an
// 80x24 window (the default terminal, as in the stress report; the
// screen's emulator grows with the window) attaches, reads the first
// output and leaves.
func (e *env) touch(ctx context.Context, instance string) error {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	t, err := dialWSWindow(dctx, e, instance, 80, 24)
	if err != nil {
		return err
	}
	s := newShell(ctx, t, pathWS)
	defer s.Close()
	s.bound(dialTimeout)
	if err := s.firstOutput(false); err != nil {
		return fmt.Errorf("%s: %w", instance, err)
	}
	return nil
}

// settle waits until the gateway holds want sessions with no client
// attached and memSteady samples in a row, memSettleEvery apart, show the
// same goroutines (the departures' clean-ups are done), within
// memSettleMax; then it has the gateway collect its garbage and samples
// it (collect). A gateway whose sessions never get there is an error.
func (e *env) settle(ctx context.Context, hc *http.Client, want int) (s memSample, took time.Duration, err error) {
	t0 := time.Now()
	steady := 0
	prev := -1
	for {
		if s, err = e.memSample(ctx, hc); err != nil {
			return s, time.Since(t0), err
		}
		detached, err := e.detachedSessions(ctx, hc)
		if err != nil {
			return s, time.Since(t0), err
		}
		switch {
		case detached != want || s.goroutines != prev:
			steady = 1
		default:
			steady++
		}
		prev = s.goroutines
		if detached == want && steady >= memSteady {
			break
		}
		if time.Since(t0) > memSettleMax {
			if detached != want {
				return s, time.Since(t0), fmt.Errorf("the gateway holds %d sessions without clients after %s, want %d", detached, memSettleMax, want)
			}
			break // goroutines still moving: measured anyway
		}
		select {
		case <-time.After(memSettleEvery):
		case <-ctx.Done():
			return s, time.Since(t0), context.Cause(ctx)
		}
	}
	took = time.Since(t0)
	s, err = e.collect(ctx, hc)
	return s, took, err
}

// collect has the gateway finish two garbage collections, leaves it alone
// for memSweep and samples it: its heap in use is then what it holds, not
// the garbage of the sessions' creation, which otherwise stays until the
// heap doubles or two minutes pass. It asks for /metrics in a loop (each
// answer allocates), up to memSettleMax. The pause lets the runtime sweep
// what the last collection found unreachable (until then it counts as in
// use); what remains is the objects reachable, the spans they keep, and
// one request's garbage.
func (e *env) collect(ctx context.Context, hc *http.Client) (memSample, error) {
	t0 := time.Now()
	first, err := e.memSample(ctx, hc)
	if err != nil {
		return first, err
	}
	for requests := 1; ; requests++ {
		s, err := e.memSample(ctx, hc)
		if err != nil {
			return s, err
		}
		if s.gcs >= first.gcs+2 {
			select {
			case <-time.After(memSweep):
			case <-ctx.Done():
				return s, context.Cause(ctx)
			}
			s, err = e.memSample(ctx, hc)
			s.collectIn, s.collectRequests = time.Since(t0), requests+1
			return s, err
		}
		if time.Since(t0) > memSettleMax {
			return s, fmt.Errorf("the gateway did not collect its garbage twice in %s (%d requests for /metrics)", memSettleMax, requests)
		}
	}
}

// memSample reads the gateway's RSS and PSS from /proc and its heap in use
// and goroutines from /metrics.
func (e *env) memSample(ctx context.Context, hc *http.Client) (memSample, error) {
	var s memSample
	pid := e.gw.PID()
	var err error
	if s.rss, err = procRSS(pid); err != nil {
		return s, err
	}
	if s.pss, err = procPSS(pid); err != nil {
		return s, err
	}
	body, err := e.get(ctx, hc, "/metrics")
	if err != nil {
		return s, err
	}
	s.goroutines = -1
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			s.goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(line, "go_gc_duration_seconds_count "); ok {
			s.gcs, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			s.heap = int64(f)
		}
	}
	if s.goroutines < 0 || s.heap == 0 {
		return s, errors.New("the gateway's /metrics has no go_goroutines or go_memstats_heap_inuse_bytes")
	}
	return s, nil
}

// detachedSessions is the number of the gateway's sessions with no client.
func (e *env) detachedSessions(ctx context.Context, hc *http.Client) (int, error) {
	body, err := e.get(ctx, hc, "/api/sessions")
	if err != nil {
		return 0, err
	}
	var list []struct {
		Clients int `json:"clients"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, fmt.Errorf("/api/sessions: %w", err)
	}
	n := 0
	for _, s := range list {
		if s.Clients == 0 {
			n++
		}
	}
	return n, nil
}

func (e *env) get(ctx context.Context, hc *http.Client, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.webAddr+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, err
}

// holderCensus finds the holder processes in every container (host PIDs
// from the engine's top, command lines from /proc: "holder-HASH serve")
// and sums their PSS.
func (e *env) holderCensus(ctx context.Context) (procs, lo, hi int, pss int64, err error) {
	lo = -1
	for _, name := range e.containers {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		top, err := e.docker.ContainerTop(tctx, name, nil)
		cancel()
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("top of %s: %w", name, err)
		}
		col := -1
		for i, t := range top.Titles {
			if t == "PID" {
				col = i
			}
		}
		if col < 0 {
			return 0, 0, 0, 0, fmt.Errorf("top of %s: no PID column in %q", name, top.Titles)
		}
		here := 0
		for _, p := range top.Processes {
			pid, err := strconv.Atoi(p[col])
			if err != nil {
				continue
			}
			if !isHolder(pid) {
				continue
			}
			b, err := procPSS(pid)
			if err != nil {
				continue // it ended in between, or is a zombie
			}
			here++
			pss += b
		}
		procs += here
		if lo < 0 || here < lo {
			lo = here
		}
		hi = max(hi, here)
	}
	return procs, max(lo, 0), hi, pss, nil
}

// isHolder reports whether the process runs the holder's server.
func isHolder(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return holderArgs(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
}

// holderArgs reports whether a command line is the holder's server: the
// program holder-HASH (the daemon, /tmp/.termgate/holder-HASH serve ...)
// or holder (the exec that copied it in and stays as the gateway's stream,
// ./holder serve ... --attach --install-as ...), with the argument serve.
func holderArgs(args []string) bool {
	if len(args) < 2 || args[1] != "serve" {
		return false
	}
	base := filepath.Base(args[0])
	return base == "holder" || strings.HasPrefix(base, "holder-")
}

// report adds the per-session rows of one gateway.
func (r memResult) report(rep *Report, path string, n int) {
	per := func(a, b int64) float64 { return float64(b-a) / 1024 / float64(n) }
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	settled := fmt.Sprintf("settled in %.1f s, two GCs in %.1f s (%d requests)", r.settledIn.Seconds(), r.after.collectIn.Seconds(), r.after.collectRequests)
	gr := float64(r.after.goroutines-r.before.goroutines) / float64(n)
	rep.add("mem_session_rss", path, per(r.before.rss, r.after.rss), nil,
		fmt.Sprintf("%d sessions created in %.1f s, %s; RSS %.1f -> %.1f MiB; %.1f goroutines each", n, r.createdIn.Seconds(), settled, mib(r.before.rss), mib(r.after.rss), gr), nil)
	rep.add("mem_session_pss", path, per(r.before.pss, r.after.pss), nil,
		fmt.Sprintf("PSS %.1f -> %.1f MiB", mib(r.before.pss), mib(r.after.pss)), nil)
	rep.add("mem_session_heap", path, per(r.before.heap, r.after.heap), nil,
		fmt.Sprintf("go_memstats_heap_inuse_bytes right after a GC, %.1f -> %.1f MiB", mib(r.before.heap), mib(r.after.heap)), nil)
}
