package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/termgate/termgate/internal/gatewayproc"
)

// gateway is one termgate process: its flags, state directory and log
// survive restarts (a restart after SIGKILL reuses them).
type gateway struct {
	e        *env
	name     string
	eng      *engine // nil with --backend local
	args     []string
	env      []string // extra environment of the next start
	bin      string   // the binary of the next start ("": the run's)
	stateDir string
	logPath  string // every run's log, appended
	sshAddr  string
	httpAddr string
	http     *http.Client

	proc *gatewayproc.Gateway // the current run; nil before the first
}

// newGateway prepares a gateway for eng (nil: --backend local) with extra
// flags; start runs it.
func (e *env) newGateway(name string, eng *engine, extra ...string) (*gateway, error) {
	n := e.next()
	g := &gateway{
		e: e, name: name, eng: eng,
		stateDir: filepath.Join(e.dir, fmt.Sprintf("state-%s-%d", name, n)),
		logPath:  filepath.Join(e.dir, fmt.Sprintf("termgate-%s-%d.log", name, n)),
		// No keep-alive: no idle connection (and its goroutines in the
		// gateway) outlives a request, so samples do not count them.
		// A reset waits for the instance's earlier resets: a storm of
		// concurrent ones on a loaded machine takes tens of seconds.
		http: &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	if err := e.writeState(g.stateDir); err != nil {
		return nil, err
	}
	backend := "docker"
	if eng == nil {
		backend = "local"
	}
	g.args = append([]string{
		"--state-dir", g.stateDir,
		"--backend", backend,
		"--shell", soakShell,
		"--instance-label", e.label(),
		"--idle-timeout", "2h",
		"--http-rate-limit", "0",
		"--log-level", "info",
	}, extra...)
	e.mu.Lock()
	e.gateways = append(e.gateways, g)
	e.mu.Unlock()
	return g, nil
}

// start runs the gateway on ports the OS picks and waits for /healthz.
func (g *gateway) start(ctx context.Context) error {
	env := append([]string{runEnv + "=" + g.e.runID}, g.env...) // local shells inherit it
	if g.eng != nil {
		env = append(env, g.eng.gatewayEnv()...)
	}
	bin := g.e.bin
	if g.bin != "" {
		bin = g.bin
	}
	proc, err := gatewayproc.Start(ctx, gatewayproc.Config{
		Bin: bin, StateDir: g.stateDir, Args: g.args, Env: env,
		LogFile: g.logPath, StartWithin: healthzWait,
	})
	if err != nil {
		return fmt.Errorf("gateway %s: %w", g.name, err)
	}
	g.proc, g.sshAddr, g.httpAddr = proc, proc.SSHAddr, proc.HTTPAddr
	return nil
}

// runEnv is in every gateway's environment; local shells inherit it, so
// leftovers of this run can be found in /proc.
const runEnv = "TGSOAK_RUN"

func (g *gateway) url(path string) string { return "http://" + g.httpAddr + path }

func (g *gateway) running() bool { return g.proc != nil && g.proc.Running() }

func (g *gateway) pid() int { return g.proc.PID() }

// sigterm sends SIGTERM and waits; after stopWithin plus two seconds it
// kills. It returns how long the exit took and an error for a late or
// unclean exit.
func (g *gateway) sigterm() (time.Duration, error) {
	if g.proc == nil {
		return 0, fmt.Errorf("the gateway never started")
	}
	took, err := g.proc.Stop(stopWithin + 2*time.Second)
	if err != nil {
		return took, fmt.Errorf("%w%s", err, g.logTail(10))
	}
	if took > stopWithin {
		return took, fmt.Errorf("exited %s after SIGTERM, over the contract's %s", took.Round(time.Millisecond), stopWithin)
	}
	return took, nil
}

func (g *gateway) kill9() {
	if g.proc != nil {
		g.proc.Kill()
	}
}

// logTail returns the last n lines of the run's log, for an error.
func (g *gateway) logTail(n int) string {
	if g.proc == nil {
		return ""
	}
	return "\n    gateway log (last lines):\n      " + strings.ReplaceAll(g.proc.Tail(n), "\n", "\n      ")
}

// logLines are the lines of the current run's log.
func (g *gateway) logLines() []string {
	if g.proc == nil || g.proc.Log.String() == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(g.proc.Log.String(), "\n"), "\n")
}

// countLog counts the log lines (since the byte offset from) that contain
// every one of subs.
func (g *gateway) countLog(from int, subs ...string) (n int, sample string) {
	lines := g.logLines()
	for _, l := range lines[min(from, len(lines)):] {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			n++
			if sample == "" {
				sample = l
			}
		}
	}
	return n, sample
}

// logLen is the number of log lines so far (an offset for countLog).
func (g *gateway) logLen() int { return len(g.logLines()) }

// ---- HTTP ----

func (g *gateway) request(ctx context.Context, method, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, g.url(path), nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+g.e.token)
	resp, err := g.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, body, err
}

// sessionInfo is one element of GET /api/sessions.
type sessionInfo struct {
	Instance string `json:"instance"`
	Session  string `json:"session"`
	Clients  int    `json:"clients"`
}

func (g *gateway) sessions(ctx context.Context) ([]sessionInfo, error) {
	status, body, err := g.request(ctx, http.MethodGet, "/api/sessions")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET /api/sessions: %d %s", status, body)
	}
	var out []sessionInfo
	return out, json.Unmarshal(body, &out)
}

// session returns the instance's session (ok false: none).
func (g *gateway) session(ctx context.Context, instance string) (sessionInfo, bool, error) {
	list, err := g.sessions(ctx)
	for _, s := range list {
		if s.Instance == instance {
			return s, true, nil
		}
	}
	return sessionInfo{}, false, err
}

// waitClients waits until the instance's session has n clients (n 0: also
// when it has no session), within d.
func (g *gateway) waitClients(ctx context.Context, instance string, n int, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last sessionInfo
	var ok bool
	var err error
	for {
		last, ok, err = g.session(ctx, instance)
		if err == nil && (ok && last.Clients == n || !ok && n == 0) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s: %d clients attached after %s, want %d", instance, last.Clients, d, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ---- samples ----

// sample is what a case compares before and after: the gateway's
// goroutines (go_goroutines from /metrics), descriptors, RSS and threads
// (/proc/PID).
type sample struct {
	Goroutines int   `json:"goroutines"`
	FDs        int   `json:"fds"`
	RSSKiB     int64 `json:"rss_kib"`
	Threads    int   `json:"threads"`
	HeapKiB    int64 `json:"heap_inuse_kib"` // go_memstats_heap_inuse_bytes
}

func (g *gateway) sample(ctx context.Context) (sample, error) {
	var s sample
	pid := g.pid()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, fmt.Errorf("descriptors of the gateway: %w", err)
	}
	s.FDs = len(fds)
	if s.RSSKiB, s.Threads, err = procStatus(pid); err != nil {
		return s, err
	}
	status, body, err := g.request(ctx, http.MethodGet, "/metrics")
	if err != nil || status != http.StatusOK {
		return s, fmt.Errorf("GET /metrics: %d %v", status, err)
	}
	s.Goroutines = -1
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			s.Goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			s.HeapKiB = int64(f) >> 10
		}
	}
	if s.Goroutines < 0 {
		return s, fmt.Errorf("/metrics has no go_goroutines")
	}
	return s, nil
}

// procStatus reads VmRSS (KiB) and Threads from /proc/PID/status.
func procStatus(pid int) (rssKiB int64, threads int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("status of the gateway: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rssKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "Threads:":
			threads, _ = strconv.Atoi(f[1])
		}
	}
	return rssKiB, threads, nil
}

// Leak tolerances: the Docker client's pool of idle keep-alive connections
// to the engine (a descriptor and two goroutines each) grows and shrinks
// on its own; a leak of one per cycle over hundreds of cycles is far above
// these.
const (
	slackGoroutines = 6
	slackFDs        = 3
)

// settle waits, up to d, until the gateway is back to base (within the
// slack) and returns the last sample and whether it got there.
func (g *gateway) settle(ctx context.Context, base sample, d time.Duration) (sample, bool) {
	deadline := time.Now().Add(d)
	for {
		s, err := g.sample(ctx)
		if err == nil && s.Goroutines <= base.Goroutines+slackGoroutines && s.FDs <= base.FDs+slackFDs {
			return s, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return s, false
		}
		time.Sleep(250 * time.Millisecond)
	}
}
