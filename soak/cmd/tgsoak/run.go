package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// soakCase is one case of the run.
type soakCase struct {
	name   string
	what   string
	engine bool // needs a private engine
	run    func(ctx context.Context, r *runner, res *result)
}

// allCases run in this order. The main gateway is shared by the cases that
// leave it running; the ones that kill or stop a gateway start their own.
var allCases = []soakCase{
	{name: "cycles", what: "attach/detach cycles over SSH and WebSocket: clean close, FIN, RST; the same shell throughout", run: caseCycles},
	{name: "openssh-kill", what: "OpenSSH clients killed with -9 while attached, and one ~. detach", run: caseOpenSSH},
	{name: "reset-storm", what: "resets over SSH, HTTP POST and WebSocket control, some concurrent: one shell, only the latest job", run: caseResetStorm},
	{name: "never-reading", what: "clients that never read while output streams: dropped and released, the shell not slowed, RSS bounded", run: caseNeverReading},
	{name: "paste", what: "pastes of 1-10 MiB over SSH and WebSocket arrive byte-exact (sha256sum in the container)", run: casePaste},
	{name: "container-kill", what: "docker kill of an attached container: clients told and disconnected, session gone, nothing leaked", run: caseContainerKill},
	{name: "restart-at-scale", what: "gateway SIGKILL under a session in each of many containers (300; 20 with -short), restart: listening within 2 s, every old shell ended in the background, an attach at once gets one shell", run: caseRestartAtScale},
	{name: "gateway-kill", what: "gateway SIGKILL and restart: the old shells and jobs are swept, a reattach gets one fresh shell", run: caseGatewayKill},
	{name: "sigterm-docker", what: "SIGTERM with idle sessions and streaming clients (Docker): exit within 10 s, no process left; per-session cost", run: caseSigtermDocker},
	{name: "sigterm-local", what: "SIGTERM with many local sessions (half with a background job): exit within 10 s, no process left; per-session cost", run: caseSigtermLocal},
	{name: "durable-kill", what: "gateway SIGKILL and restart with streaming --durable sessions: each resumed with session&since, every line exactly once", run: caseDurableKill},
	{name: "durable-upgrade", what: "an older holder build's durable sessions adopted by this build after SIGTERM: resumed exactly, and reset", run: caseDurableUpgrade},
	{name: "holder-kill", what: "kill -9 of a durable session's holder: the client told the holder died, no job left, a fresh shell next", run: caseHolderKill},
	{name: "socket-gone", what: "the holder's socket deleted: attach, reset and a restart's adoption answer within 20 s, one shell", run: caseSocketGone},
	{name: "pause", what: "docker pause, unpause and commit of attached ordinary and durable sessions: told, kept, the same shell after", run: casePause},
	{name: "resize-storm", what: "one client resizing as fast as it can: /metrics and /api/sessions answer, the session too, at the last size; memory given back", run: caseResizeStorm},
	{name: "engine-kill", what: "private dockerd SIGKILL and restart: sessions end, no leftover shell, never two shells", engine: true, run: caseEngineKill(false)},
	{name: "engine-kill-live", what: "the same with dockerd --live-restore (the containers keep running through the crash)", engine: true, run: caseEngineKill(true)},
}

func findCase(name string) *soakCase {
	for i := range allCases {
		if allCases[i].name == name {
			return &allCases[i]
		}
	}
	return nil
}

// result is one case's row in the table.
type result struct {
	Name     string        `json:"name"`
	Skipped  string        `json:"skipped,omitempty"`
	Failures []string      `json:"failures,omitempty"`
	Before   *sample       `json:"before,omitempty"`
	After    *sample       `json:"after,omitempty"`
	PeakRSS  int64         `json:"peak_rss_kib,omitempty"`
	Shells   string        `json:"shells,omitempty"` // shells per container afterwards
	Notes    []string      `json:"notes,omitempty"`
	Took     time.Duration `json:"took_ns"`

	// skipFails makes a skip a failure: an engine case skipped under
	// TERMGATE_REQUIRE_DOCKER=1, or a case the -timeout left no time for.
	skipFails bool
}

func (r *result) failf(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

func (r *result) notef(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// check records a failure for a non-nil error and reports whether it was
// nil.
func (r *result) check(err error, what string) bool {
	if err != nil {
		r.failf("%s: %v", what, err)
		return false
	}
	return true
}

func (r *result) pass() bool { return r.Skipped == "" && len(r.Failures) == 0 }

// report is the whole run.
type report struct {
	RunID    string        `json:"run_id"`
	Short    bool          `json:"short"`
	Counts   counts        `json:"counts"`
	Results  []*result     `json:"results"`
	Errors   []string      `json:"errors,omitempty"` // setup and cleanup
	Took     time.Duration `json:"took_ns"`
	Started  time.Time     `json:"started"`
	Load     string        `json:"load"`
	Required bool          `json:"-"` // TERMGATE_REQUIRE_DOCKER=1: the engine cases must run
}

func (rep *report) ok() bool {
	if len(rep.Errors) > 0 {
		return false
	}
	for _, r := range rep.Results {
		if len(r.Failures) > 0 || r.Skipped != "" && r.skipFails {
			return false
		}
	}
	return true
}

// runner is what the cases share: the environment and the main gateway.
type runner struct {
	e   *env
	cfg *config
	mg  *gateway // the main gateway (docker backend, main engine), started lazily
}

func (r *runner) logf(format string, args ...any) { r.e.logf(format, args...) }

// mainGateway returns the shared gateway, starting it when needed.
func (r *runner) mainGateway(ctx context.Context) (*gateway, error) {
	if r.mg != nil && r.mg.running() {
		return r.mg, nil
	}
	if r.mg == nil {
		g, err := r.e.newGateway("main", r.e.main)
		if err != nil {
			return nil, err
		}
		r.mg = g
	}
	return r.mg, r.mg.start(ctx)
}

// run runs the selected cases and returns the report; progress goes to
// progress (unless -q).
func run(ctx context.Context, cfg *config, progress io.Writer) *report {
	logf := func(format string, args ...any) {
		if !cfg.quiet {
			fmt.Fprintf(progress, "tgsoak: "+format+"\n", args...)
		}
	}
	rep := &report{Short: cfg.short, Counts: cfg.counts, Started: time.Now(), Load: loadAvg(),
		Required: os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1"}
	defer func() { rep.Took = time.Since(rep.Started) }()
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("the -timeout of %s ran out", cfg.timeout))
	defer cancel()
	e, err := newEnv(ctx, cfg, logf)
	if e != nil {
		rep.RunID = e.runID
		defer func() {
			if err := e.teardown(); err != nil {
				rep.Errors = append(rep.Errors, "cleanup: "+err.Error())
			}
			if left := localLeftovers(e.runID, e.bin); len(left) > 0 {
				rep.Errors = append(rep.Errors, "processes of this run left on the host: "+strings.Join(left, "; "))
			}
		}()
	}
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
		return rep
	}
	logf("run %s (%s counts); temporary directory %s", e.runID, map[bool]string{true: "short", false: "full"}[cfg.short], e.dir)
	r := &runner{e: e, cfg: cfg}
	engineSkip := ""
	if !cfg.engine {
		engineSkip = "-engine=false"
	} else if _, err := dockerdPath(); err != nil {
		engineSkip = err.Error()
	}
	for _, c := range allCases {
		if len(cfg.only) > 0 && !slices.Contains(cfg.only, c.name) || slices.Contains(cfg.skip, c.name) {
			continue
		}
		res := &result{Name: c.name}
		rep.Results = append(rep.Results, res)
		if c.engine && engineSkip != "" {
			res.Skipped = engineSkip
			res.skipFails = rep.Required && cfg.engine
			logf("%s: skipped: %s", c.name, engineSkip)
			continue
		}
		if ctx.Err() != nil {
			res.Skipped = context.Cause(ctx).Error()
			res.skipFails = true
			continue
		}
		logf("%s: %s", c.name, c.what)
		start := time.Now()
		c.run(ctx, r, res)
		res.Took = time.Since(start)
		if ctx.Err() != nil && len(res.Failures) == 0 {
			res.failf("interrupted: %v", context.Cause(ctx))
		}
		verdict := "PASS"
		if !res.pass() {
			verdict = "FAIL: " + strings.Join(res.Failures, "; ")
		}
		logf("%s: %s (%s)", c.name, verdict, res.Took.Round(time.Millisecond))
	}
	return rep
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
