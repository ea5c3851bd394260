package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

var paths = []string{pathDirect, pathSSH, pathWS}

// streamPaths are the paths of the throughput and echo phases: termgate's,
// the direct exec, and the OpenSSH and relay anchors when they are on.
func streamPaths(cfg *config) []string {
	if cfg.openssh {
		return withRelay(cfg, append(slices.Clone(paths), pathOpenSSH))
	}
	return withRelay(cfg, paths)
}

// rotate returns paths starting at index i (mod len), so that no path is
// always measured first.
func rotate(ps []string, i int) []string {
	i %= len(ps)
	return append(append([]string(nil), ps[i:]...), ps[:i]...)
}

// instanceFor maps a path to its container: the SSH and WebSocket clients
// must not share a session (each would get the other's output), and the
// direct exec runs beside the SSH session in the first container.
func instanceFor(e *env, path string) string {
	if e, path = e.route(path); e == nil { // a durable path: the --durable gateway's containers
		return "" // dial says why
	}
	if path == pathWS {
		return e.instance(1)
	}
	return e.instance(0)
}

// runTimeout bounds one throughput run: at least 20 s, and no slower than
// 1 MB/s.
func runTimeout(bytes int) time.Duration {
	return max(20*time.Second, time.Duration(bytes/1_000_000)*time.Second)
}

func measureAll(ctx context.Context, e *env, cfg *config, logf func(string, ...any)) *Report {
	rep := &Report{
		Started: time.Now(),
		Host: Host{
			GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
			DockerVersion: e.serverVersion, DockerAPI: e.apiVersion, Termgate: describeBinary(cfg.termgate),
			LoadStart: loadAvg(),
		},
		Config: Settings{
			Bytes: cfg.bytes, Runs: cfg.runs, Keystrokes: cfg.keystrokes, Attaches: cfg.attaches, Fanout: cfg.fanout, Scale: cfg.scale,
			Image: cfg.image, Shell: benchShell, Window: fmt.Sprintf("%dx%d", benchCols, benchRows),
		},
	}
	// phase runs f unless the run is over; then its metrics are failed.
	phase := func(metrics []string, ps []string, f func()) {
		if ctx.Err() == nil {
			f()
			return
		}
		for _, m := range metrics {
			for _, p := range ps {
				rep.fail(m, p, fmt.Errorf("not measured: %w", context.Cause(ctx)))
			}
		}
	}
	fanPath := fmt.Sprintf("%d clients", cfg.fanout)
	shells := map[string]*shell{}
	sps := streamPaths(cfg)
	phase([]string{"throughput"}, sps, func() {
		for _, p := range sps {
			s, err := openShell(ctx, e, p, instanceFor(e, p))
			if err != nil {
				logf("%s: %v", p, err)
				continue
			}
			shells[p] = s
		}
		logf("throughput: %d bytes, %d runs per path", cfg.bytes, cfg.runs)
		throughput(ctx, cfg, sps, shells, rep, logf)
	})
	phase([]string{"cpu_per_gb"}, cpuPathsFor(cfg), func() {
		reopen(ctx, e, withRelay(cfg, paths), shells, logf)
		logf("gateway CPU per GB: %d bytes, %d runs per path", cfg.cpuBytes, cfg.runs)
		cpuPerGB(ctx, e, cfg, shells, rep, logf)
	})
	phase([]string{"echo_p50", "echo_p99"}, sps, func() {
		reopen(ctx, e, sps, shells, logf)
		logf("keystroke echo: %d keystrokes per path", cfg.keystrokes)
		latency(ctx, cfg, sps, shells, rep)
	})
	for _, s := range shells {
		s.Close()
	}
	phase([]string{"attach"}, paths, func() {
		logf("attach to an existing session vs a fresh docker exec: %d each", cfg.attaches)
		attachExisting(ctx, e, cfg, rep)
	})
	if cfg.fanout > 0 {
		phase(fanoutMetrics, []string{fanPath}, func() {
			logf("fan-out: %d clients on one session", cfg.fanout)
			fanout(ctx, e, cfg, rep)
		})
		if cfg.pace > 0 {
			phase(pacedMetrics, []string{pacedPath(cfg)}, func() {
				logf("paced fan-out: %d clients on one session, the shell at %s/s", cfg.fanout, formatPace(cfg.pace))
				fanoutPaced(ctx, e, cfg, rep)
			})
		}
	}
	phase(catchupMetrics, []string{catchupPath}, func() {
		logf("catching up: the shell's pace alone and with %d clients reading at 100 KB/s", cfg.slowReaders)
		catchup(ctx, e, cfg, rep)
	})
	phase([]string{"skip_cost"}, nil, func() {
		logf("skip cost: one redraw at %d window sizes, in process", len(skipSizes))
		skipCost(ctx, rep)
	})
	if cfg.scale > 0 {
		phase(scaleMetrics, []string{scalePath(cfg)}, func() {
			logf("scale: %d SSH clients attached at once", cfg.scale)
			scale(ctx, e, cfg, rep)
		})
	}
	phase([]string{"attach_new"}, newPaths(cfg), func() {
		logf("attach creating a new session: %d each", min(cfg.attaches, 5))
		attachNew(ctx, e, cfg, rep)
	})
	if cfg.openssh {
		phase(rsyncMetrics, []string{pathSSH, pathRsyncSSHD}, func() {
			logf("rsync: %d MiB up and down, through the gateway and over a plain sshd", rsyncMiB)
			rsyncBench(ctx, e, cfg, rep, logf)
		})
	}
	if cfg.memSessions > 0 {
		phase(append(memMetrics, holderMetrics...), memPaths(cfg), func() {
			logf("memory: %d sessions in a fresh gateway, ordinary then --durable", cfg.memSessions)
			memory(ctx, cfg, rep, logf)
		})
	}
	rep.computeRatios()
	rep.computeOverheads()
	rep.Host.LoadEnd = loadAvg()
	return rep
}

// describeBinary names the termgate binary, with its VCS revision when it
// was stamped into it.
func describeBinary(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return path
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return path + " (" + s.Value + ")"
		}
	}
	return path
}

// reopen replaces the shells that failed with fresh ones, once.
func reopen(ctx context.Context, e *env, paths []string, shells map[string]*shell, logf func(string, ...any)) {
	for _, p := range paths {
		if s, ok := shells[p]; ok && s.term != nil {
			continue
		}
		s, err := openShell(ctx, e, p, instanceFor(e, p))
		if err != nil {
			logf("%s: reopen: %v", p, err)
			delete(shells, p)
			continue
		}
		shells[p] = s
	}
}

// broken closes a shell after an error; reopen replaces it.
func broken(shells map[string]*shell, p string) {
	if s := shells[p]; s != nil && s.term != nil {
		s.Close()
		s.term = nil
	}
}

// throughput times `head -c N /dev/zero | tr '\0' x` per path, interleaved
// run by run. MB/s is 10^6 bytes per second, from sending the command to
// reading its end marker.
func throughput(ctx context.Context, cfg *config, paths []string, shells map[string]*shell, rep *Report, logf func(string, ...any)) {
	gen := func(n int) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", n) }
	timeout := runTimeout(cfg.bytes)
	failed := map[string]error{}
	for _, p := range paths {
		if shells[p] == nil {
			failed[p] = errors.New("no shell (see the log above)")
		}
	}
	samples := map[string][]float64{}
	for r := -1; r < cfg.runs; r++ { // run -1 is the warm-up
		n := cfg.bytes
		if r < 0 {
			n = max(1000, cfg.bytes/4)
		}
		for _, p := range rotate(paths, r+1) {
			if failed[p] != nil {
				continue
			}
			if r == 0 {
				shells[p].reads, shells[p].bytes = 0, 0
			}
			got, d, err := shells[p].command(gen(n), timeout)
			if err == nil && got < int64(n) {
				err = fmt.Errorf("read %d bytes, expected at least %d", got, n)
			}
			if err != nil {
				failed[p] = fmt.Errorf("run %d: %w", r+1, cause(ctx, err))
				broken(shells, p)
				continue
			}
			if r >= 0 {
				samples[p] = append(samples[p], float64(got)/d.Seconds()/1e6)
			}
		}
		if r >= 0 {
			var line strings.Builder
			for _, p := range paths {
				fmt.Fprintf(&line, "  %s %.1f", p, last(samples[p]))
			}
			logf("  run %d:%s MB/s", r+1, line.String())
		}
		if ctx.Err() != nil {
			break
		}
	}
	for _, p := range paths {
		if failed[p] != nil {
			rep.fail("throughput", p, failed[p])
			continue
		}
		note := fmt.Sprintf("client reads averaged %.1f KiB", float64(shells[p].bytes)/float64(max(1, shells[p].reads))/1024)
		rep.addSamples(ctx, "throughput", p, median(samples[p]), samples[p], cfg.runs, note)
	}
}

// cause puts the reason the run ended (timeout, interrupt) in front of an
// error it caused, such as a read from a connection closed for it.
func cause(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	c := context.Cause(ctx)
	if strings.Contains(err.Error(), c.Error()) {
		return err
	}
	return fmt.Errorf("%v (%w)", c, err)
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}

const echoWarmup = 20

// latency times keystroke echoes. Each shell runs
//
//	stty raw -echo; dd bs=1 count=N; stty sane
//
// so every byte sent is read by dd and written back by it, one at a time,
// as a shell's line editor echoes what is typed. One keystroke goes to each
// path in turn; each is timed from the write to the read of its echo.
func latency(ctx context.Context, cfg *config, paths []string, shells map[string]*shell, rep *Report) {
	total := echoWarmup + cfg.keystrokes
	failed := map[string]error{}
	ends := map[string]*scanner{}
	for _, p := range paths {
		s := shells[p]
		if s == nil || s.term == nil {
			failed[p] = errors.New("no shell (see the log above)")
			continue
		}
		rdy, printRdy := marker("RDY")
		end, printEnd := marker("END")
		ends[p] = newScanner(end)
		s.bound(15 * time.Second)
		line := fmt.Sprintf("stty raw -echo; %s; dd bs=1 count=%d 2>/dev/null; stty sane; %s\r", printRdy, total, printEnd)
		if _, err := s.Write([]byte(line)); err != nil {
			failed[p] = err
			continue
		}
		if _, err := s.readUntil(rdy); err != nil {
			failed[p] = err
		}
	}
	samples := map[string][]float64{}
	key := []byte{0}
	for i := 0; i < total && ctx.Err() == nil; i++ {
		key[0] = byte('a' + i%26)
		for _, p := range rotate(paths, i) {
			if failed[p] != nil {
				continue
			}
			s := shells[p]
			s.bound(5 * time.Second)
			t0 := time.Now()
			if _, err := s.Write(key); err != nil {
				failed[p] = fmt.Errorf("keystroke %d: %w", i, cause(ctx, err))
				continue
			}
			rest, err := s.readByte(key[0])
			if err == nil && len(rest) > 0 && i < total-1 {
				err = fmt.Errorf("unexpected output %q after the echo of %q", rest, key[0])
			}
			if err != nil {
				failed[p] = fmt.Errorf("keystroke %d: %w", i, cause(ctx, err))
				continue
			}
			ends[p].feed(rest)
			if i >= echoWarmup {
				samples[p] = append(samples[p], float64(time.Since(t0).Nanoseconds())/1e3)
			}
		}
	}
	for _, p := range paths {
		if failed[p] == nil {
			shells[p].bound(10 * time.Second)
			if _, err := shells[p].scanUntil(ends[p]); err != nil {
				failed[p] = fmt.Errorf("after the keystrokes: %w", cause(ctx, err))
			}
		}
		if failed[p] == nil && len(samples[p]) < cfg.keystrokes {
			failed[p] = fmt.Errorf("only %d of %d keystrokes: %w", len(samples[p]), cfg.keystrokes, context.Cause(ctx))
		}
		if failed[p] != nil {
			rep.fail("echo_p50", p, failed[p])
			rep.fail("echo_p99", p, failed[p])
			continue
		}
		rep.addSamples(ctx, "echo_p50", p, percentile(samples[p], 50), nil, 0, fmt.Sprintf("%d samples, mean %.0f us", len(samples[p]), mean(samples[p])))
		rep.addSamples(ctx, "echo_p99", p, percentile(samples[p], 99), nil, 0, fmt.Sprintf("max %.0f us", percentile(samples[p], 100)))
	}
}

// readByte reads the echo of b and returns what followed it in the same
// read. In raw mode nothing may come before the echo but the newline after
// the ready marker; anything else means that dd was not the one reading
// (the keystrokes went elsewhere), and is reported. After the last
// keystroke, the end marker may follow the echo at once.
func (s *shell) readByte(b byte) (rest []byte, err error) {
	for {
		n, err := s.Read(s.buf)
		if n > 0 {
			got := s.buf[:n]
			lead := bytes.TrimLeft(got, "\r\n")
			if len(lead) > 0 && lead[0] == b {
				return lead[1:], nil
			}
			if len(lead) > 0 {
				return nil, fmt.Errorf("echo of %q: unexpected output %q", b, got[:min(n, 200)])
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// timeAttach dials path and times it to the first byte of terminal output,
// or with untilPrompt to the shell's prompt: a new termgate session's first
// bytes are the snapshot of its still empty screen, sent before the shell
// has printed anything, so they would flatter termgate against a fresh
// exec's prompt. then, when not nil, runs on the still open terminal.
func timeAttach(ctx context.Context, e *env, path, instance string, untilPrompt bool, then func(*shell) error) (time.Duration, error) {
	return timeAttachUntil(ctx, e, path, instance, untilPrompt, 0, then)
}

// timeAttachUntil is timeAttach that, with replay > 0, times the attach
// until that many bytes (less replaySlack) have arrived: the whole replay of an existing
// termgate session (see replayLength), which is what its user waits for.
// Its first byte comes with the first SSH packet (32 KiB at most), before
// the rest of a 64 KiB replay is even encrypted.
func timeAttachUntil(ctx context.Context, e *env, path, instance string, untilPrompt bool, replay int, then func(*shell) error) (time.Duration, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	t0 := time.Now()
	var t term
	var err error
	if path == pathDirect {
		t, err = dialDirect(dctx, e, instance) // no resize: the prompt does not wait for it
	} else {
		t, err = dial(dctx, e, path, instance)
	}
	if err != nil {
		return 0, err
	}
	s := newShell(ctx, t, path)
	defer s.Close()
	s.bound(dialTimeout)
	if replay > 0 {
		err = s.readAtLeast(max(1, replay-replaySlack))
	} else {
		err = s.firstOutput(untilPrompt)
	}
	if err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if then != nil {
		return d, then(s)
	}
	return d, nil
}

// fillCommand prints 1,200 numbered lines of 90 bytes (108 KB): more than
// the screen replay's 64 KiB of scrollback and the raw replay's 64 KiB.
const fillCommand = `i=0; while [ $i -lt 1200 ]; do echo "tgbench replay line $i: the quick brown fox jumps over the lazy dog 0123456789"; i=$((i+1)); done`

// fillReplay prints fillCommand in the session of path, so that every
// attach gets a full replay (issue 11: "a full 64 KiB replay"), whatever
// the earlier phases left on its screen (a session whose shell had ended
// left a 570-byte screen in some runs).
func fillReplay(ctx context.Context, e *env, path, instance string) error {
	s, err := openShell(ctx, e, path, instance)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, _, err := s.command(fillCommand, 30*time.Second); err != nil {
		return fmt.Errorf("filling the replay: %w", err)
	}
	// The prompt follows the marker: on a busy machine it came after the
	// next attach's snapshot, which replayLength then counted as replay.
	select {
	case <-time.After(replayQuiet):
	case <-ctx.Done():
	}
	return nil
}

// replaySlack is how many bytes short of replayLength's count an attach
// may stop, in case a few bytes of output came after the counted replay's
// snapshot (the prompt after fillCommand did, 5 bytes, before fillReplay
// waited for it; the screen's scrollback is bounded, so the next snapshots
// were no longer for it). 256 bytes short,
// the last SSH packet of the replay has arrived unless it is smaller than
// that; a WebSocket replay is one frame.
const replaySlack = 256

// replayQuiet is how long replayLength waits for more output: a replay
// arrives in one burst, and the benchmark's shells are idle by then.
const replayQuiet = 300 * time.Millisecond

// replayLength attaches to an existing termgate session once, untimed, and
// counts its replay: the bytes that arrive until the output has been quiet
// for replayQuiet. The session is idle, so every attach gets the same
// replay (a snapshot of the same screen, or the same raw bytes).
func replayLength(ctx context.Context, e *env, path, instance string) (int, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	t, err := dial(dctx, e, path, instance)
	if err != nil {
		return 0, err
	}
	s := newShell(ctx, t, path)
	defer s.Close()
	s.bound(dialTimeout)
	counts := make(chan int)
	var readErr error
	go func() { // ends when Close below fails its Read
		defer close(counts)
		buf := make([]byte, 64<<10)
		for {
			n, err := t.Read(buf)
			if n > 0 {
				counts <- n
			}
			if err != nil {
				readErr = err
				return
			}
		}
	}()
	total := 0
	quiet := time.NewTimer(dialTimeout) // until the first byte
	defer quiet.Stop()
	for {
		select {
		case n, ok := <-counts:
			if !ok {
				return 0, fmt.Errorf("counting the replay: the connection ended after %d bytes: %w", total, readErr)
			}
			total += n
			quiet.Reset(replayQuiet)
		case <-quiet.C:
			s.Close()
			for range counts {
			}
			if total == 0 {
				return 0, errors.New("counting the replay: no output within the dial timeout")
			}
			return total, nil
		}
	}
}

// attachExisting times attaches to the termgate sessions the earlier
// phases left, filled with output (fillReplay), until their whole replay
// has arrived (replayLength counts it first), against fresh `docker exec`s (their prompt is the first
// output).
func attachExisting(ctx context.Context, e *env, cfg *config, rep *Report) {
	samples := map[string][]float64{}
	failed := map[string]error{}
	replays := map[string]int{}
	for _, p := range paths {
		if p == pathDirect {
			continue
		}
		if err := fillReplay(ctx, e, p, instanceFor(e, p)); err != nil {
			failed[p] = cause(ctx, err)
			continue
		}
		n, err := replayLength(ctx, e, p, instanceFor(e, p))
		if err != nil {
			failed[p] = cause(ctx, err)
			continue
		}
		replays[p] = n
	}
	for i := 0; i < cfg.attaches && ctx.Err() == nil; i++ {
		for _, p := range rotate(paths, i) {
			if failed[p] != nil {
				continue
			}
			d, err := timeAttachUntil(ctx, e, p, instanceFor(e, p), p == pathDirect, replays[p], nil)
			if err != nil {
				failed[p] = fmt.Errorf("attach %d: %w", i+1, cause(ctx, err))
				continue
			}
			samples[p] = append(samples[p], float64(d.Microseconds())/1e3)
		}
	}
	for _, p := range paths {
		if failed[p] != nil {
			rep.fail("attach", p, failed[p])
			continue
		}
		note := ""
		if n := replays[p]; n > 0 {
			note = fmt.Sprintf("until the whole %d-byte replay has arrived", n)
		}
		rep.addSamples(ctx, "attach", p, median(samples[p]), samples[p], cfg.attaches, note)
	}
}

// attachNew times attaches that start the session (termgate's docker exec
// plus its own work), against the fresh docker execs of attachExisting.
// Each measured attach then types exit, which ends the session.
func attachNew(ctx context.Context, e *env, cfg *config, rep *Report) {
	n := min(cfg.attaches, 5)
	exit := func(s *shell) error {
		s.bound(10 * time.Second)
		if _, err := s.Write([]byte("exit\r")); err != nil {
			return err
		}
		for { // until the session ends under the client
			if _, err := s.Read(s.buf); err != nil {
				return nil
			}
		}
	}
	for _, p := range newPaths(cfg) {
		inst := instanceFor(e, p)
		ge, _ := e.route(p) // the gateway that serves p
		if ge == nil {
			rep.fail("attach_new", p, errNoDurable)
			continue
		}
		var samples []float64
		err := func() error {
			if p == pathOpenSSH { // every login is a fresh docker exec
				for i := 0; i < n; i++ {
					d, err := timeAttach(ctx, e, p, inst, true, exit)
					if err != nil {
						return fmt.Errorf("attach %d: %w", i+1, cause(ctx, err))
					}
					samples = append(samples, float64(d.Microseconds())/1e3)
				}
				return nil
			}
			if err := endSession(ctx, e, ge, p, inst, exit); err != nil {
				return fmt.Errorf("ending the earlier session: %w", err)
			}
			for i := 0; i < n; i++ {
				d, err := timeAttach(ctx, e, p, inst, true, exit)
				if err != nil {
					return fmt.Errorf("attach %d: %w", i+1, cause(ctx, err))
				}
				samples = append(samples, float64(d.Microseconds())/1e3)
				if err := waitNoSession(ctx, ge, inst); err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			rep.fail("attach_new", p, err)
			continue
		}
		rep.addSamples(ctx, "attach_new", p, median(samples), samples, n, "compared with a fresh docker exec")
	}
}

// newPaths are the paths of the new-session attach.
func newPaths(cfg *config) []string {
	ps := []string{pathSSH, pathWS}
	if cfg.openssh {
		ps = append(ps, pathOpenSSH)
	}
	for _, p := range paths {
		if _, ok := inGateway(p); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// endSession ends the instance's session, if any, and waits until the
// gateway ge (the one that serves path) has forgotten it.
func endSession(ctx context.Context, e, ge *env, path, instance string, exit func(*shell) error) error {
	has, err := hasSession(ctx, ge, instance)
	if err != nil || !has {
		return err
	}
	if _, err := timeAttach(ctx, e, path, instance, true, exit); err != nil {
		return err
	}
	return waitNoSession(ctx, ge, instance)
}

// waitNoSession polls GET /api/sessions until instance has no session
// (the gateway has killed the old shell's processes), at most 10 s.
func waitNoSession(ctx context.Context, e *env, instance string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		has, err := hasSession(ctx, e, instance)
		if errors.Is(err, errRateLimited) && time.Now().Before(deadline) {
			err, has = nil, true // the API's rate limit: ask again later
		}
		if err != nil || !has {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the session of %s was still listed 10s after its shell exited", instance)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errRateLimited is the API's 429: too many requests from this address.
var errRateLimited = errors.New("GET /api/sessions: 429 Too Many Requests")

func hasSession(ctx context.Context, e *env, instance string) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+e.webAddr+"/api/sessions", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("GET /api/sessions: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		return false, errRateLimited
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET /api/sessions: %s", resp.Status)
	}
	var list []struct{ Instance string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return false, fmt.Errorf("GET /api/sessions: %w", err)
	}
	for _, s := range list {
		if s.Instance == instance {
			return true, nil
		}
	}
	return false, nil
}

// fanoutMetrics are the fan-out phase's metrics.
var fanoutMetrics = []string{"fanout_lone", "fanout_client", "fanout_slowest", "fanout_fastest"}

// fanout first has one client alone on a session run the generator (the
// reference: a lone client's MB/s), then attaches cfg.fanout-1 more (SSH
// and WebSocket in turn) and runs it again; every client reads all of its
// output. Per-client MB/s is measured from sending the command to that
// client's reading the end marker. The fastest client's rate is the
// shell's pace: the session hands each chunk to every client at once, so
// a shell slowed down by its clients shows there.
func fanout(ctx context.Context, e *env, cfg *config, rep *Report) {
	path := fmt.Sprintf("%d clients", cfg.fanout) // as in measureAll
	failAll := func(err error) {
		for _, m := range fanoutMetrics {
			rep.fail(m, path, err)
		}
	}
	clients, err := openFanout(ctx, e, 0, 1)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if err != nil {
		failAll(err)
		return
	}
	runs := min(cfg.runs, 3)
	timeout := runTimeout(cfg.bytes)
	cmd := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", cfg.bytes)
	var lone []float64
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var rates []float64
		if rates, err = fanoutRun(clients, cmd, timeout, cfg.bytes); err != nil {
			err = fmt.Errorf("lone client, run %d: %w", r+1, cause(ctx, err))
			break
		}
		lone = append(lone, rates[0])
	}
	if err == nil && cfg.fanout > 1 {
		var more []*shell
		more, err = openFanout(ctx, e, 1, cfg.fanout-1)
		clients = append(clients, more...)
	}
	var perClient, slowest, fastest []float64
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var rates []float64
		rates, err = fanoutRun(clients, cmd, timeout, cfg.bytes)
		if err != nil {
			err = fmt.Errorf("run %d: %w", r+1, cause(ctx, err))
			break
		}
		perClient = append(perClient, mean(rates))
		slowest = append(slowest, percentile(rates, 0))
		fastest = append(fastest, percentile(rates, 100))
	}
	if err != nil {
		failAll(err)
		return
	}
	rep.addSamples(ctx, "fanout_lone", path, median(lone), lone, runs, "one SSH client alone on the session, same command; compared with direct single-client throughput")
	note := "SSH and WebSocket clients in turn; compared with one client alone on the session (fanout_lone)"
	rep.addSamples(ctx, "fanout_client", path, median(perClient), perClient, runs, note)
	rep.addSamples(ctx, "fanout_slowest", path, median(slowest), slowest, runs, note)
	rep.addSamples(ctx, "fanout_fastest", path, median(fastest), fastest, runs, "the shell's pace with every client attached; "+note)
}

// openFanout attaches n clients to the first benchmark session, numbered
// from first: even ones over SSH (each key serves at most perKey of them),
// odd ones over WebSocket.
func openFanout(ctx context.Context, e *env, first, n int) ([]*shell, error) {
	var clients []*shell
	for i := first; i < first+n; i++ {
		p := pathSSH
		if i%2 == 1 {
			p = pathWS
		}
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		var t term
		var err error
		if p == pathSSH {
			t, err = dialSSHAs(dctx, e, e.instance(0), i/2)
		} else {
			t, err = dial(dctx, e, p, e.instance(0))
		}
		cancel()
		if err != nil {
			return clients, fmt.Errorf("client %d (%s): %w", i+1, p, err)
		}
		clients = append(clients, newShell(ctx, t, p))
	}
	// In step: every client reads up to one marker.
	_, err := fanoutRun(clients, "", 10*time.Second, 0)
	return clients, err
}

// fanoutRun has the first client run cmd and returns each client's MB/s.
func fanoutRun(clients []*shell, cmd string, timeout time.Duration, want int) ([]float64, error) {
	for _, c := range clients {
		c.bound(timeout)
	}
	t0 := time.Now()
	m, err := clients[0].send(cmd, "END")
	if err != nil {
		return nil, err
	}
	rates := make([]float64, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			n, err := c.readUntil(m)
			d := time.Since(t0)
			if err == nil && n < int64(want) {
				err = fmt.Errorf("read %d bytes, expected at least %d", n, want)
			}
			if err != nil {
				errs[i] = fmt.Errorf("client %d (%s): %w", i+1, c.path, err)
				return
			}
			rates[i] = float64(n) / d.Seconds() / 1e6
		})
	}
	wg.Wait()
	return rates, errors.Join(errs...)
}
