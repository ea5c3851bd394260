package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// pathCLI is the reference of the CPU metric: the docker CLI relaying the
// same stream (`docker exec -t CONTAINER sh -c 'head -c N /dev/zero | tr "\0" y'` with its
// output to /dev/null), the cost of a plain relay on this machine.
const pathCLI = "docker exec -t"

// cpuPaths are the paths whose relay CPU is measured, in the order of the
// first round (with -relay, the relay process's too: cpuPathsFor).
var cpuPaths = []string{pathCLI, pathSSH, pathWS}

func cpuPathsFor(cfg *config) []string { return withRelay(cfg, cpuPaths) }

// cpuPerGB measures the gateway's CPU time (utime+stime of its process,
// from /proc/PID/stat) while it relays N bytes of output to one client, and
// the docker CLI's CPU time relaying the same stream, in interleaved rounds.
// The unit is CPU-seconds per GB (10^9 bytes of the generator's output).
// CPU time is steadier than throughput on a busy machine: it counts the
// work, not the waiting.
func cpuPerGB(ctx context.Context, e *env, cfg *config, shells map[string]*shell, rep *Report, logf func(string, ...any)) {
	n := cfg.cpuBytes
	// The throughput phase's generator: busybox's yes writes a line per
	// system call, which makes the shell's side, not the relay, the cost
	// (70 KB/s through docker exec -t on a busy machine).
	gen := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' y", n)
	// CPU time does not depend on how busy the machine is, but the run's
	// length does: allow 0.5 MB/s.
	timeout := max(time.Minute, time.Duration(n/500_000)*time.Second)
	failed := map[string]error{}
	ps := cpuPathsFor(cfg)
	for _, p := range ps[1:] { // all but the CLI have a shell
		if shells[p] == nil || shells[p].term == nil {
			failed[p] = errors.New("no shell (see the log above)")
		}
	}
	samples := map[string][]float64{}
	for r := 0; r < cfg.runs && ctx.Err() == nil; r++ {
		for _, p := range rotate(ps, r) {
			if failed[p] != nil {
				continue
			}
			var cpu time.Duration
			var err error
			switch p {
			case pathCLI:
				cpu, err = cliCPU(ctx, e, gen, timeout)
			case pathRelay:
				cpu, err = streamCPU(e.relay.pid(), shells[p], gen, n, timeout)
			default:
				cpu, err = streamCPU(e.gw.PID(), shells[p], gen, n, timeout)
			}
			if err != nil {
				failed[p] = fmt.Errorf("run %d: %w", r+1, cause(ctx, err))
				if p != pathCLI {
					broken(shells, p)
				}
				continue
			}
			samples[p] = append(samples[p], cpu.Seconds()/(float64(n)/1e9))
		}
		logf("  run %d: %s %.1f  ssh %.1f  websocket %.1f  relay %.1f CPU-s/GB", r+1,
			pathCLI, last(samples[pathCLI]), last(samples[pathSSH]), last(samples[pathWS]), last(samples[pathRelay]))
	}
	for _, p := range ps {
		if failed[p] != nil {
			rep.fail("cpu_per_gb", p, failed[p])
			continue
		}
		note := "gateway process"
		switch p {
		case pathCLI:
			note = "docker CLI process, output to /dev/null"
		case pathRelay:
			note = relayCPUNote
		}
		rep.addSamples(ctx, "cpu_per_gb", p, median(samples[p]), samples[p], cfg.runs, note)
	}
}

// streamCPU runs gen in s and returns the CPU time of process pid (the
// gateway, or the relay) meanwhile.
func streamCPU(pid int, s *shell, gen string, n int, timeout time.Duration) (time.Duration, error) {
	before, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	got, _, err := s.command(gen, timeout)
	if err != nil {
		return 0, err
	}
	if got < int64(n) {
		return 0, fmt.Errorf("read %d bytes, expected at least %d", got, n)
	}
	after, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	return after - before, nil
}

// cliCPU runs gen with `docker exec -t` and returns the CLI's CPU time.
func cliCPU(ctx context.Context, e *env, gen string, timeout time.Duration) (time.Duration, error) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "docker", "exec", "-t", e.instance(0), "sh", "-c", gen)
	cmd.Stdout = devnull
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("docker exec -t: %w: %s", err, stderr.String())
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line; the command name in parentheses may hold spaces.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat %q: too few fields", stat)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc stat %q: bad utime or stime", stat)
	}
	return time.Duration(ut+st) * clockTick, nil
}
