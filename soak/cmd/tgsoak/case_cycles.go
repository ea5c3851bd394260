package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/termgate/termgate/internal/termtest"
)

// Shared steps of the cases.

// baseline samples the gateway once it has been quiet for a moment.
func (r *runner) baseline(ctx context.Context, g *gateway, res *result) (sample, bool) {
	time.Sleep(500 * time.Millisecond)
	s, err := g.sample(ctx)
	if !res.check(err, "sample the gateway") {
		return s, false
	}
	res.Before = &s
	return s, true
}

// touch makes sure inst has a session (a WebSocket attach that runs one
// command and leaves) and waits until no client is attached.
func (r *runner) touch(ctx context.Context, g *gateway, inst string) error {
	t, err := g.attachWS(ctx, inst)
	if err != nil {
		return err
	}
	_, err = command(t, "", 20*time.Second)
	_ = t.Leave(closeClean)
	if err != nil {
		return err
	}
	return g.waitClients(ctx, inst, 0, settleWait)
}

// settleWait bounds how long a gateway may take to release what a case
// used (connections ending, goroutines returning).
const settleWait = 20 * time.Second

// finish waits for the gateway to return to base and records the after
// sample; staying above base (plus the slack) is a leak.
func (r *runner) finish(ctx context.Context, g *gateway, res *result, base sample) {
	s, ok := g.settle(ctx, base, settleWait)
	res.After = &s
	if !ok {
		res.failf("leak: goroutines %d -> %d, descriptors %d -> %d, %s after the last client left (slack %d goroutines, %d descriptors)",
			base.Goroutines, s.Goroutines, base.FDs, s.FDs, settleWait, slackGoroutines, slackFDs)
	}
}

// oneShell checks that the container runs exactly one shell, of one
// session, and records it.
func (r *runner) oneShell(ctx context.Context, eng *engine, name string, res *result) census {
	c, err := eng.waitCensus(ctx, name, 10*time.Second, func(c census) bool { return c.Shells == 1 && c.Sessions == 1 })
	res.Shells = strconv.Itoa(c.Shells)
	res.check(err, "exactly one shell in "+name)
	return c
}

// caseCycles attaches and detaches Cycles times, alternating SSH and
// WebSocket and the three ways of leaving, always to the same shell, while
// a job prints a line every 50 ms.
func caseCycles(ctx context.Context, r *runner, res *result) {
	g, err := r.mainGateway(ctx)
	if !res.check(err, "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "cycles", 1)
	if !res.check(err, "start a container") {
		return
	}
	inst := names[0]
	first, err := g.attachSSH(ctx, 0, inst)
	if !res.check(err, "first attach") {
		return
	}
	pid, err := shellPID(first)
	if err == nil {
		// Output keeps arriving while clients detach (issue 10 item 4: a
		// detach in the middle of output was once logged as a drop). The
		// ticker is a job, not a shell: its command line is not /bin/sh.
		_, err = command(first, "sh -c 'while :; do echo tick; usleep 50000; done' soak-ticker &", 20*time.Second)
	}
	_ = first.Leave(closeClean)
	if !res.check(err, "the shell's PID") {
		return
	}
	if !res.check(g.waitClients(ctx, inst, 0, settleWait), "detach") {
		return
	}
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}
	logFrom := g.logLen()
	errs := 0
	start := time.Now()
	n := r.cfg.Cycles
	for i := 0; i < n && ctx.Err() == nil; i++ {
		kind := closeKinds[(i/2)%len(closeKinds)]
		var t term
		if i%2 == 0 {
			t, err = g.attachSSH(ctx, i/2, inst)
		} else {
			t, err = g.attachWS(ctx, inst)
		}
		if err == nil {
			if i%50 == 0 || i == n-1 {
				var got string
				if got, err = shellPID(t); err == nil && got != pid {
					err = fmt.Errorf("the shell is %s, was %s: the session did not survive the detaches", got, pid)
				}
			} else {
				_, err = command(t, "", 20*time.Second)
			}
			if lerr := t.Leave(kind); err == nil && lerr != nil && kind == closeClean {
				err = fmt.Errorf("leave: %w", lerr)
			}
		}
		if err != nil {
			errs++
			if errs <= 5 {
				res.failf("cycle %d (%s, %s): %v", i, viaOf(i), kind, err)
			}
			if errs > 20 {
				res.failf("stopped after %d failed cycles", errs)
				break
			}
		}
		if (i+1)%1000 == 0 {
			r.logf("cycles: %d/%d (%.0f/s)", i+1, n, float64(i+1)/time.Since(start).Seconds())
		}
	}
	took := time.Since(start)
	res.notef("%d cycles (SSH and WebSocket; clean, FIN, RST) in %s, %.1f/s; %d failed", n, took.Round(time.Millisecond), float64(n)/took.Seconds(), errs)
	res.check(g.waitClients(ctx, inst, 0, settleWait), "all clients detached")
	r.finish(ctx, g, res, base)
	r.oneShell(ctx, r.e.main, inst, res)
	if k, line := g.countLog(logFrom, "client dropped"); k > 0 {
		res.failf("%d detaches were logged as a client dropped for falling behind (the log must say what happened), e.g. %s", k, line)
	}
}

func viaOf(i int) string {
	if i%2 == 0 {
		return "ssh"
	}
	return "websocket"
}

// caseOpenSSH attaches with the OpenSSH client and kills it with SIGKILL
// (OpenSSHKills times), then detaches once with ~.: the gateway sees every
// client go, the shell stays, nothing leaks.
func caseOpenSSH(ctx context.Context, r *runner, res *result) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			res.failf("TERMGATE_REQUIRE_OPENSSH=1 but the OpenSSH client is not installed")
		} else {
			res.Skipped = "the OpenSSH client (ssh) is not installed"
		}
		return
	}
	g, err := r.mainGateway(ctx)
	if !res.check(err, "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "ossh", 1)
	if !res.check(err, "start a container") {
		return
	}
	inst := names[0]
	_, port, _ := net.SplitHostPort(g.sshAddr)
	pidRE := regexp.MustCompile(`OSSH-(\d+)-PID`)
	var pid string
	var base sample
	for i := 0; i <= r.cfg.OpenSSHKills && ctx.Err() == nil; i++ {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		cmd := exec.CommandContext(cctx, sshBin, "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", r.e.keyFiles[i%keyCount], "-p", port,
			"-tt", inst+"@127.0.0.1")
		cmd.Env = append(os.Environ(), "TERM=xterm", "HOME="+r.e.dir)
		out := termtest.NewStream()
		cmd.Stdout, cmd.Stderr = out, out
		stdin, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if !res.check(err, "start ssh") {
			cancel()
			return
		}
		fmt.Fprintf(stdin, "echo OSSH-$$-PID\n")
		m, _ := out.WaitFor(pidRE, 0, 20*time.Second)
		if m == nil {
			res.failf("OpenSSH attach %d: no PID within 20s; output %q", i, tail(out.String(), 300))
		} else if pid == "" {
			pid = m[1]
		} else if m[1] != pid {
			res.failf("OpenSSH attach %d: the shell is %s, was %s", i, m[1], pid)
		}
		how := "kill -9"
		if i == r.cfg.OpenSSHKills {
			how = "~."
			fmt.Fprintf(stdin, "\n~.")
		} else {
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
		_ = cmd.Wait()
		cancel()
		if err := g.waitClients(ctx, inst, 0, settleWait); err != nil {
			res.failf("after %s of OpenSSH: %v", how, err)
		}
		if i == 0 {
			var ok bool
			if base, ok = r.baseline(ctx, g, res); !ok {
				return
			}
		}
	}
	res.notef("%d OpenSSH clients killed with -9 and one ~. detach; the shell stayed %s", r.cfg.OpenSSHKills, pid)
	r.finish(ctx, g, res, base)
	r.oneShell(ctx, r.e.main, inst, res)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
