package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The paced fan-out: the full-speed fan-out (fanout) runs the generator as
// fast as the machine allows, so with 100 clients it measures the CPUs (the
// benchmark's own 100 readers beside the gateway and the shell), not the
// gateway. Here the shell prints at a terminal's pace instead, a block every
// pacedTick for -fanout-pace-for, once with one client alone and once with
// all -fanout clients attached: the shell's own pace shows whether the
// clients slow it, each client's delivered rate and lag whether the
// gateway keeps up with all of them.

// pacedTick is the shell's period: one block of pace/100 bytes per tick,
// each block due at a deadline (start + k ticks) by the kernel's uptime
// clock (centiseconds, read by the shell's builtin read: no fork per
// block), so the pace does not drift; the shell sleeps with read -t on a
// FIFO nobody writes to. A shell that falls behind (slowed by its clients
// or the machine) prints its next blocks at once to catch up, as a program
// writing to a terminal does, and its measured pace shows it.
const pacedTick = 10 * time.Millisecond

// Bounds of -fanout-pace and -fanout-pace-for.
const (
	minPace    = 1_000
	maxPace    = 50_000_000
	minPaceFor = time.Second
	maxPaceFor = time.Minute
)

var pacedMetrics = []string{
	"fanout_paced_shell_lone", "fanout_paced_shell",
	"fanout_paced_lone", "fanout_paced_client", "fanout_paced_slowest",
	"fanout_paced_lag_lone", "fanout_paced_lag_p50", "fanout_paced_lag_max",
	"fanout_paced_cpu_lone", "fanout_paced_cpu",
	"fanout_paced_wait_lone", "fanout_paced_wait",
	"fanout_paced_bench_lone", "fanout_paced_bench",
	"fanout_paced_host_lone", "fanout_paced_host",
}

// pacedRefs maps a paced metric measured with every client attached to
// its lone-client counterpart, the reference of its ratio.
var pacedRefs = map[string]string{
	"fanout_paced_shell":   "fanout_paced_shell_lone",
	"fanout_paced_client":  "fanout_paced_lone",
	"fanout_paced_slowest": "fanout_paced_lone",
	"fanout_paced_lag_p50": "fanout_paced_lag_lone",
	"fanout_paced_lag_max": "fanout_paced_lag_lone",
	"fanout_paced_cpu":     "fanout_paced_cpu_lone",
	"fanout_paced_wait":    "fanout_paced_wait_lone",
	"fanout_paced_bench":   "fanout_paced_bench_lone",
	"fanout_paced_host":    "fanout_paced_host_lone",
}

// pacedDirect returns the reference of a paced metric: its lone-client
// counterpart when that was measured; the lone metrics have none.
func (r *Report) pacedDirect(metric string) (Result, bool) {
	ref, ok := pacedRefs[metric]
	if !ok {
		return Result{}, false
	}
	for _, res := range r.Results {
		if res.Metric == ref && res.Error == "" && res.Value > 0 {
			return res, true
		}
	}
	return Result{}, false
}

func pacedPath(cfg *config) string {
	return fmt.Sprintf("%d clients, %s/s", cfg.fanout, formatPace(cfg.pace))
}

// parsePace reads -fanout-pace: bytes per second, with an optional KB or
// MB suffix (10^3, 10^6, as tgbench's MB/s) and "/s"; "0" turns it off.
func parsePace(s string) (int, error) {
	t := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "/S")
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"KB", 1e3}, {"MB", 1e6}, {"K", 1e3}, {"M", 1e6}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	n := int(v * mult)
	if err != nil || n != 0 && (n < minPace || n > maxPace) {
		return 0, fmt.Errorf("-fanout-pace %q: use bytes per second from %s to %s, e.g. 400KB or 2MB (0: skip the paced fan-out)",
			s, formatPace(minPace), formatPace(maxPace))
	}
	return n, nil
}

func formatPace(n int) string {
	switch {
	case n >= 1e6 && n%100_000 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + " MB"
	case n >= 1e3 && n%100 == 0:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + " KB"
	}
	return strconv.Itoa(n) + " B"
}

// pacedCommand returns the command line of one paced run, its start and
// end markers and the bytes it prints between them. busybox's ts stamps
// each marker line (microseconds since the epoch) as it passes it on, so
// the stamp in front of the end marker is the moment the shell printed it.
func pacedCommand(cfg *config) (line string, start, end []byte, printed int64) {
	block := cfg.pace / int(time.Second/pacedTick)
	blocks := int(cfg.paceFor / pacedTick)
	start, startPrintf := marker("PS")
	end, endPrintf := marker("PE")
	// t and u: uptime in centiseconds ("33464.90" -> 3346490), one tick
	// each (pacedTick); d: how many ticks the next block is early.
	const now = "read u _ </proc/uptime"
	line = fmt.Sprintf("b=$(head -c %d /dev/zero | tr '\\0' x); f=/tmp/tgb.$$; mkfifo $f; exec 3<>$f; rm $f; "+
		"%s | ts %%.s; %s; t=${u%%.*}${u#*.}; k=0; while [ $k -lt %d ]; do printf %%s \"$b\"; k=$((k+1)); "+
		"%s; d=$((t+k-${u%%.*}${u#*.})); [ $d -gt 9 ] && d=9; [ $d -gt 0 ] && read -t 0.0$d x <&3; done; exec 3<&-; %s | ts %%.s",
		block, startPrintf, now, blocks, now, endPrintf)
	return line, start, end, int64(block) * int64(blocks)
}

// pacedResult is one paced run.
type pacedResult struct {
	shell    float64   // the shell's pace, KB/s, by its own clock (the stamps)
	rates    []float64 // per client: KB/s from the shell's start to the client reading the end marker
	lags     []float64 // per client: ms from the shell printing the end marker to the client reading it
	gwCPU    float64   // the gateway's CPU over the run, % of one CPU
	benchCPU float64   // tgbench's own (the clients'), % of one CPU
	gwWait   float64   // the gateway's threads runnable but waiting for a CPU, % of the run
	hostBusy float64   // the machine's CPUs busy over the run (every process), % of all of them
}

// fanoutPaced measures the paced fan-out: -runs (at most 3) paced runs
// with one SSH client alone on the session, then as many with -fanout
// clients attached (SSH and WebSocket in turn, as in fanout).
func fanoutPaced(ctx context.Context, e *env, cfg *config, rep *Report) {
	rep.Config.FanoutPace = cfg.pace
	path := pacedPath(cfg)
	failAll := func(err error) {
		for _, m := range pacedMetrics {
			rep.fail(m, path, err)
		}
	}
	clients, err := openFanout(ctx, e, 0, 1)
	defer func() { closeAll(clients) }()
	if err != nil {
		failAll(err)
		return
	}
	runs := min(cfg.runs, 3)
	var lone, all []pacedResult
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var res pacedResult
		if res, err = pacedRun(e, cfg, clients); err != nil {
			err = fmt.Errorf("lone client, run %d: %w", r+1, cause(ctx, err))
			break
		}
		lone = append(lone, res)
	}
	if err == nil && cfg.fanout > 1 {
		var more []*shell
		more, err = openFanout(ctx, e, 1, cfg.fanout-1)
		clients = append(clients, more...)
	}
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var res pacedResult
		if res, err = pacedRun(e, cfg, clients); err != nil {
			err = fmt.Errorf("run %d: %w", r+1, cause(ctx, err))
			break
		}
		all = append(all, res)
	}
	if err != nil {
		failAll(err)
		return
	}
	add := func(metric string, rs []pacedResult, f func(pacedResult) float64, note string) {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, f(r))
		}
		rep.addSamples(ctx, metric, path, median(xs), xs, runs, note)
	}
	shell := func(r pacedResult) float64 { return r.shell }
	first := func(xs func(pacedResult) []float64) func(pacedResult) float64 {
		return func(r pacedResult) float64 { return xs(r)[0] }
	}
	rates := func(r pacedResult) []float64 { return r.rates }
	lags := func(r pacedResult) []float64 { return r.lags }
	nominal := fmt.Sprintf("nominal %s/s: %d bytes every %s for %s", formatPace(cfg.pace), cfg.pace/int(time.Second/pacedTick), pacedTick, cfg.paceFor)
	add("fanout_paced_shell_lone", lone, shell, "the shell's own pace with one SSH client alone (busybox ts stamps), "+nominal)
	add("fanout_paced_shell", all, shell, "the shell's own pace with every client attached; ratio to alone: the shell not slowed = 1")
	add("fanout_paced_lone", lone, first(rates), "bytes printed / (client reads the end marker - shell starts)")
	add("fanout_paced_client", all, func(r pacedResult) float64 { return mean(r.rates) }, "SSH and WebSocket clients in turn")
	add("fanout_paced_slowest", all, func(r pacedResult) float64 { return percentile(r.rates, 0) }, "target (issue 11): at least 0.8 of the lone client")
	add("fanout_paced_lag_lone", lone, first(lags), "from the shell printing the end marker to the client reading it")
	add("fanout_paced_lag_p50", all, func(r pacedResult) float64 { return percentile(r.lags, 50) }, "")
	add("fanout_paced_lag_max", all, func(r pacedResult) float64 { return percentile(r.lags, 100) }, "")
	add("fanout_paced_cpu_lone", lone, func(r pacedResult) float64 { return r.gwCPU }, "the gateway process's CPU over the run, % of one CPU")
	add("fanout_paced_cpu", all, func(r pacedResult) float64 { return r.gwCPU }, "")
	add("fanout_paced_wait_lone", lone, func(r pacedResult) float64 { return r.gwWait }, "the gateway's threads runnable but waiting for a CPU (/proc/PID/task/*/schedstat), % of the run")
	add("fanout_paced_wait", all, func(r pacedResult) float64 { return r.gwWait }, "high: the machine's CPUs, not the gateway's work, hold the gateway back")
	add("fanout_paced_bench_lone", lone, func(r pacedResult) float64 { return r.benchCPU }, "tgbench's own CPU (its clients reading, decrypting, parsing) over the run, % of one CPU")
	add("fanout_paced_bench", all, func(r pacedResult) float64 { return r.benchCPU }, "")
	add("fanout_paced_host_lone", lone, func(r pacedResult) float64 { return r.hostBusy }, "every CPU of the machine busy over the run (/proc/stat, all processes), %")
	add("fanout_paced_host", all, func(r pacedResult) float64 { return r.hostBusy }, "at 100 % the machine, not the gateway, sets the pace")
}

// pacedRun has the first client run the paced command while every client
// reads all of it.
func pacedRun(e *env, cfg *config, clients []*shell) (pacedResult, error) {
	timeout := 4*cfg.paceFor + 20*time.Second
	for _, c := range clients {
		c.bound(timeout)
	}
	defer func() {
		for _, c := range clients {
			_ = c.SetDeadline(time.Time{}) // see shell.command
		}
	}()
	line, start, end, printed := pacedCommand(cfg)
	pid := e.gw.PID()
	t0 := time.Now()
	cpu0, err := procCPU(pid)
	if err != nil {
		return pacedResult{}, err
	}
	self0, err := procCPU(os.Getpid())
	if err != nil {
		return pacedResult{}, err
	}
	wait0, err := procWait(pid)
	if err != nil {
		return pacedResult{}, err
	}
	busy0, total0, err := hostCPU()
	if err != nil {
		return pacedResult{}, err
	}
	if _, err := clients[0].Write([]byte(line + "\r")); err != nil {
		return pacedResult{}, err
	}
	type got struct {
		start, end, at time.Time
	}
	gots := make([]got, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			r := &stampReader{s: c}
			st, _, err := r.find(start)
			if err == nil {
				var n int64
				var en, at time.Time
				if n, en, at, err = r.findStamped(end); err == nil && n < printed {
					err = fmt.Errorf("read %d bytes, expected at least %d", n, printed)
				}
				gots[i] = got{st, en, at}
			}
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					err = fmt.Errorf("%w (the paced run needs busybox's sh, ts and mkfifo in the image)", err)
				}
				errs[i] = fmt.Errorf("client %d (%s): %w", i+1, c.path, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return pacedResult{}, err
	}
	cpu1, err := procCPU(pid)
	self1, err2 := procCPU(os.Getpid())
	wait1, err3 := procWait(pid)
	wall := time.Since(t0)
	if err = errors.Join(err, err2, err3); err != nil {
		return pacedResult{}, err
	}
	busy1, total1, err := hostCPU()
	if err != nil {
		return pacedResult{}, err
	}
	g0 := gots[0]
	shellTime := g0.end.Sub(g0.start)
	if shellTime <= 0 {
		return pacedResult{}, fmt.Errorf("the shell's stamps go backwards (%s, %s)", g0.start, g0.end)
	}
	res := pacedResult{shell: float64(printed) / shellTime.Seconds() / 1e3}
	for _, g := range gots {
		res.rates = append(res.rates, float64(printed)/g.at.Sub(g0.start).Seconds()/1e3)
		res.lags = append(res.lags, float64(g.at.Sub(g.end).Microseconds())/1e3)
	}
	res.gwCPU = 100 * (cpu1 - cpu0).Seconds() / wall.Seconds()
	res.benchCPU = 100 * (self1 - self0).Seconds() / wall.Seconds()
	res.gwWait = 100 * (wait1 - wait0).Seconds() / wall.Seconds()
	if total1 > total0 {
		res.hostBusy = 100 * float64(busy1-busy0) / float64(total1-total0)
	}
	return res, nil
}

// procWait returns how long the process's threads have been runnable but
// waiting for a CPU (the second field of each thread's schedstat; a thread
// that has exited no longer counts).
func procWait(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("the gateway's wait for a CPU is read from %s: %w", dir, err)
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // exited meanwhile
		}
		f := strings.Fields(string(data))
		if len(f) < 2 {
			return 0, fmt.Errorf("%s/%s/schedstat: unexpected %q", dir, t.Name(), data)
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, t.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// hostCPU returns the machine's busy and total CPU ticks (the "cpu" line
// of /proc/stat; idle and iowait are not busy).
func hostCPU() (busy, total uint64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("the machine's CPU use is read from /proc/stat: %w", err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for k, s := range f[1:] {
		if k >= 8 { // guest times: counted in user already
			break
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		total += v
		if k != 3 && k != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}

// stampKeep is how many bytes in front of a marker are kept for its
// stamp ("1796067238.950767 ").
const stampKeep = 32

// stampReader reads a shell's stream up to markers that busybox's ts
// stamped, one after the other.
type stampReader struct {
	s    *shell
	tail []byte    // the last bytes searched, for a marker or stamp across two reads
	pend []byte    // bytes after the last marker found, not searched yet (in s.buf)
	at   time.Time // when the last read returned
}

// find reads until m and returns the stamp in front of it and when the
// read that completed it returned.
func (r *stampReader) find(m []byte) (stamp, at time.Time, err error) {
	_, stamp, at, err = r.findStamped(m)
	return stamp, at, err
}

// findStamped reads until m and returns the bytes read up to it (m
// included), the stamp in front of it and when the read that completed it
// returned.
func (r *stampReader) findStamped(m []byte) (n int64, stamp, at time.Time, err error) {
	k := len(m)
	keep := stampKeep + k
	for {
		p := r.pend
		r.pend = nil
		var readErr error
		if len(p) == 0 {
			var nr int
			nr, readErr = r.s.Read(r.s.buf)
			r.at = time.Now()
			p = r.s.buf[:nr]
		}
		var before []byte
		found := -1 // where m ends in p
		// First across the tail and p, then in p.
		if len(r.tail) > 0 {
			w := append(r.tail[:len(r.tail):len(r.tail)], p[:min(len(p), k-1)]...)
			if i := bytes.Index(w, m); i >= 0 {
				before, found = w[:i], i+k-len(r.tail)
			}
		}
		if found < 0 {
			if i := bytes.Index(p, m); i >= 0 {
				before = append(r.tail[:len(r.tail):len(r.tail)], p[:i]...)
				found = i + k
			}
		}
		if found >= 0 {
			n += int64(found)
			r.pend, r.tail = p[found:], r.tail[:0]
			stamp, err = parseStamp(before, m)
			return n, stamp, r.at, err
		}
		n += int64(len(p))
		if len(p) >= keep {
			r.tail = append(r.tail[:0], p[len(p)-keep:]...)
		} else {
			r.tail = append(r.tail, p...)
			r.tail = r.tail[len(r.tail)-min(len(r.tail), keep):]
		}
		if readErr != nil {
			if readErr == io.EOF {
				readErr = io.ErrUnexpectedEOF
			}
			if r.s.ctx.Err() != nil {
				return n, stamp, r.at, fmt.Errorf("%w (after %d bytes, waiting for %s)", context.Cause(r.s.ctx), n, m)
			}
			return n, stamp, r.at, fmt.Errorf("after %d bytes, waiting for %s: %w", n, m, readErr)
		}
	}
}

// parseStamp reads the stamp ts put in front of marker m: the digits and
// the dot right before "<space>m", seconds.microseconds since the epoch.
func parseStamp(before, m []byte) (time.Time, error) {
	b := bytes.TrimSuffix(before, []byte(" "))
	i := len(b)
	for i > 0 && (b[i-1] >= '0' && b[i-1] <= '9' || b[i-1] == '.') {
		i--
	}
	sec, frac, ok := strings.Cut(string(b[i:]), ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	if !ok || err1 != nil || err2 != nil || len(frac) > 9 {
		return time.Time{}, fmt.Errorf("no ts stamp in front of %s (got %q): the paced run needs busybox's ts", m, before)
	}
	return time.Unix(s, us*1000), nil
}

// printPacedNotes explains the paced fan-out's rows under the table, when
// there are any.
func printPacedNotes(w io.Writer, r *Report) {
	var res *Result
	for i := range r.Results {
		if strings.HasPrefix(r.Results[i].Metric, "fanout_paced") {
			res = &r.Results[i]
			break
		}
	}
	if res == nil {
		return
	}
	fmt.Fprintf(w, "Paced fan-out (%s): the shell prints at a terminal's pace (%s), with one SSH client alone, then with\n", res.Path, r.pacedNominal())
	fmt.Fprintln(w, "every client attached; ratios are to the same metric with the client alone. The shell's pace is by its own")
	fmt.Fprintln(w, "clock (busybox ts stamps): 1.00 = the shell not slowed. A client's rate is the bytes printed over the time")
	fmt.Fprintln(w, "from the shell's start to the client reading the end marker (target: slowest >= 0.80); its lag, from the")
	fmt.Fprintln(w, "shell printing the end marker to the client reading it. Gateway wait: its threads runnable but waiting for a")
	fmt.Fprintln(w, "CPU, % of the run. tgbench's CPU is its own clients' (reading, decrypting) on the same CPUs. Machine busy near")
	fmt.Fprintln(w, "100 % (every process, all CPUs) and a gateway that waits: the CPUs, not the gateway, set the pace.")
}

// pacedNominal is the note of the shell's lone pace (its nominal pace),
// or what it was asked for.
func (r *Report) pacedNominal() string {
	if res := r.findMetric("fanout_paced_shell_lone"); res != nil && res.Note != "" {
		if _, after, ok := strings.Cut(res.Note, "nominal "); ok {
			return "nominal " + after
		}
	}
	return fmt.Sprintf("nominal %s/s", formatPace(r.Config.FanoutPace))
}

func (r *Report) findMetric(metric string) *Result {
	for i := range r.Results {
		if r.Results[i].Metric == metric {
			return &r.Results[i]
		}
	}
	return nil
}
