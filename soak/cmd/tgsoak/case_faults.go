package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// notified waits up to d for the client's session to end and returns what
// it was told: the SSH stderr notice, or the WebSocket's last event.
func notified(t term, d time.Duration) (string, error) {
	_ = t.SetDeadline(time.Now().Add(d))
	buf := make([]byte, 32<<10)
	for {
		_, err := t.Read(buf)
		if err == nil {
			continue
		}
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return "", fmt.Errorf("%s client still connected %s later", t.Via(), d)
		}
		switch c := t.(type) {
		case *sshTerm:
			return c.told(), nil
		case *wsTerm:
			if n := len(c.events); n > 1 {
				ev := c.events[n-1]
				return strings.TrimSpace(ev.Type + " " + ev.Message), nil
			}
			return "", nil
		}
		return "", nil
	}
}

// caseContainerKill kills an attached container: both clients are told
// and disconnected, the session goes, the gateway is back to its baseline.
func caseContainerKill(ctx context.Context, r *runner, res *result) {
	g, err := r.mainGateway(ctx)
	if !res.check(err, "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "kill", 1)
	if !res.check(err, "start a container") {
		return
	}
	inst := names[0]
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}
	a, err := g.attachSSH(ctx, 0, inst)
	if !res.check(err, "attach over SSH") {
		return
	}
	defer a.Leave(closeRST)
	w, err := g.attachWS(ctx, inst)
	if !res.check(err, "attach over WebSocket") {
		return
	}
	defer w.Leave(closeRST)
	if _, err := command(a, "sleep 4000 &", 20*time.Second); !res.check(err, "start a job") {
		return
	}
	kctx, cancel := context.WithTimeout(ctx, dockerWait)
	_, err = r.e.main.docker(kctx, "kill", inst)
	cancel()
	if !res.check(err, "docker kill") {
		return
	}
	start := time.Now()
	for _, t := range []term{a, w} {
		msg, err := notified(t, 15*time.Second)
		if res.check(err, "the client is disconnected when its container dies") {
			res.notef("%s client told %q and disconnected %s after docker kill", t.Via(), msg, time.Since(start).Round(time.Millisecond))
			if msg == "" {
				res.failf("the %s client was disconnected without a notice", t.Via())
			}
		}
	}
	res.check(g.waitClients(ctx, inst, 0, settleWait), "the session ends")
	res.Shells = "0 (stopped)"
	r.finish(ctx, g, res, base)
}

// caseGatewayKill SIGKILLs a gateway with two attached sessions (each with
// a background job) and restarts it on the same state: the start-up sweep
// ends the old shells and jobs, and a reattach gets one fresh shell.
func caseGatewayKill(ctx context.Context, r *runner, res *result) {
	g, err := r.e.newGateway("gwkill", r.e.main)
	if !res.check(err, "prepare a gateway") {
		return
	}
	if !res.check(g.start(ctx), "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "gwkill", 2)
	if !res.check(err, "start containers") {
		return
	}
	var clients []term
	defer func() {
		for _, t := range clients {
			_ = t.Leave(closeRST)
		}
	}()
	oldPIDs := map[string]string{}
	for i, inst := range names {
		var t term
		if i%2 == 0 {
			t, err = g.attachSSH(ctx, 0, inst)
		} else {
			t, err = g.attachWS(ctx, inst)
		}
		if !res.check(err, "attach") {
			return
		}
		clients = append(clients, t)
		if _, err := command(t, "sleep 4100 &", 20*time.Second); !res.check(err, "start a job") {
			return
		}
		pid, err := shellPID(t)
		if !res.check(err, "shell PID") {
			return
		}
		oldPIDs[inst] = pid
	}
	g.kill9()
	for _, t := range clients {
		if _, err := notified(t, 10*time.Second); err != nil {
			res.failf("after the gateway's SIGKILL: %v", err)
		}
	}
	for _, inst := range names {
		if c, err := r.e.main.marked(ctx, inst); err == nil && len(c) == 0 {
			res.notef("%s: no process left right after the SIGKILL (nothing for the sweep to do)", inst)
		}
	}
	start := time.Now()
	if !res.check(g.start(ctx), "restart the gateway") {
		return
	}
	res.notef("restarted in %s", time.Since(start).Round(time.Millisecond))
	var shells []string
	for i, inst := range names {
		if _, err := r.e.main.waitCensus(ctx, inst, settleWait, func(c census) bool { return len(c.Procs) == 0 }); err != nil {
			res.failf("the restarted gateway's sweep left the old session's processes: %v", err)
		}
		var t term
		if i%2 == 0 {
			t, err = g.attachWS(ctx, inst)
		} else {
			t, err = g.attachSSH(ctx, 0, inst)
		}
		if !res.check(err, "reattach after the restart") {
			continue
		}
		clients = append(clients, t)
		if pid, err := shellPID(t); res.check(err, "shell PID") && pid == oldPIDs[inst] {
			res.failf("%s: the shell after the restart is the old one (%s)", inst, pid)
		}
		c, err := r.e.main.waitCensus(ctx, inst, 10*time.Second, func(c census) bool { return c.Shells == 1 && c.Sessions == 1 && c.count("4100") == 0 })
		res.check(err, "one fresh shell, the old job gone")
		shells = append(shells, fmt.Sprint(c.Shells))
	}
	res.Shells = strings.Join(shells, ",")
	r.sigtermClean(ctx, g, r.e.main, names, res)
}

// sigtermClean stops g with SIGTERM and checks the contract: exit within
// 10 s, status 0, no marked process left in the containers.
func (r *runner) sigtermClean(ctx context.Context, g *gateway, eng *engine, names []string, res *result) time.Duration {
	took, err := g.sigterm()
	res.check(err, "SIGTERM")
	for _, inst := range names {
		// The contract: nothing left when the gateway has exited. A short
		// grace only for the engine's bookkeeping of the kill's exec.
		if _, err := eng.waitCensus(ctx, inst, 2*time.Second, func(c census) bool { return len(c.Procs) == 0 }); err != nil {
			res.failf("after SIGTERM, processes left in a container: %v", err)
		}
	}
	return took
}

// caseEngineKill SIGKILLs a private dockerd under an attached session with
// a background job, checks what the clients and /readyz see, restarts the
// engine and checks that no process of the old session is left (at once
// without --live-restore, where the engine stops the container; within the
// settle time with it, where the container kept running) and that a
// reattach gets exactly one shell.
func caseEngineKill(live bool) func(context.Context, *runner, *result) {
	return func(ctx context.Context, r *runner, res *result) {
		pe, err := r.e.startEngine(ctx, live)
		if !res.check(err, "start a private dockerd") {
			return
		}
		eng := pe.eng
		names, err := r.e.startContainers(ctx, eng, "engine", 1)
		if !res.check(err, "start a container on the private engine") {
			return
		}
		inst := names[0]
		g, err := r.e.newGateway("engine", eng)
		if !res.check(err, "prepare a gateway") {
			return
		}
		if !res.check(g.start(ctx), "start the gateway on the private engine") {
			return
		}
		if !res.check(r.touch(ctx, g, inst), "create the session") {
			return
		}
		base, ok := r.baseline(ctx, g, res)
		if !ok {
			return
		}
		a, err := g.attachSSH(ctx, 0, inst)
		if !res.check(err, "attach") {
			return
		}
		defer a.Leave(closeRST)
		if _, err := command(a, "sleep 4200 &", 20*time.Second); !res.check(err, "start a job") {
			return
		}
		oldPID, err := shellPID(a)
		if !res.check(err, "shell PID") {
			return
		}
		logFrom := g.logLen()

		pe.kill9()
		start := time.Now()
		msg, err := notified(a, 30*time.Second)
		if res.check(err, "the client is told when the engine dies") {
			res.notef("dockerd SIGKILL: the client was told %q after %s", msg, time.Since(start).Round(time.Millisecond))
		}
		// Told, the client goes, as OpenSSH's ssh does once its channel
		// closes. An x/crypto client would keep its connection (and the
		// gateway's half a dozen goroutines for it) open until the end of
		// the case, which the leak check then counted.
		_ = a.Leave(closeRST)
		if status, _, err := g.request(ctx, http.MethodGet, "/readyz"); err != nil || status != http.StatusServiceUnavailable {
			res.failf("/readyz with the engine down: %d %v, want 503", status, err)
		}
		if t, err := g.attachWS(ctx, inst); err == nil {
			res.failf("an attach succeeded with the engine down")
			_ = t.Leave(closeRST)
		} else {
			res.notef("an attach with the engine down: %v", err)
		}
		time.Sleep(time.Second)
		if !res.check(pe.start(ctx), "restart the private dockerd") {
			return
		}
		res.notef("engine down %s", time.Since(start).Round(time.Millisecond))
		running, _ := eng.docker(ctx, "inspect", "--format", "{{.State.Running}}", inst)
		if strings.TrimSpace(running) != "true" {
			if live {
				res.failf("with --live-restore the container stopped through the engine's restart")
			}
			res.notef("the engine's restart stopped the container (no --live-restore); starting it again")
			if _, err := eng.docker(ctx, "start", inst); !res.check(err, "docker start") {
				return
			}
		} else if !live {
			res.notef("the container kept running without --live-restore")
		}
		// No process of the old session may be left: the gateway must kill
		// it once the engine answers again.
		if c, err := eng.waitCensus(ctx, inst, settleWait, func(c census) bool { return len(c.Procs) == 0 }); err != nil {
			res.failf("the old session's shell and job still run %s after the engine came back (a failed kill must be retried): %s", settleWait, c)
		}
		// Until the gateway's retried kill has confirmed the old session's
		// end (its backoff grows while the engine is down), an attach is
		// refused with "try again shortly" (a 503 over WebSocket), as a
		// user would see it: retry as a user would, within settleWait.
		for deadline := time.Now().Add(settleWait); ; {
			t, err := g.attachWS(ctx, inst)
			if err == nil {
				_ = t.Leave(closeClean)
				break
			}
			if time.Now().After(deadline) {
				res.failf("no attach within %s of the engine's return: %v", settleWait, err)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		b, err := g.attachSSH(ctx, 0, inst)
		if !res.check(err, "reattach after the engine's restart") {
			return
		}
		defer b.Leave(closeRST)
		if pid, err := shellPID(b); res.check(err, "shell PID") && pid == oldPID && !live {
			res.failf("the shell after the restart is the old one (%s)", pid)
		}
		c, err := eng.waitCensus(ctx, inst, 5*time.Second, func(c census) bool { return c.Shells == 1 && c.Sessions == 1 })
		res.Shells = fmt.Sprint(c.Shells)
		if err != nil {
			res.failf("never two shells: after the reattach %s", c)
		}
		if k, line := g.countLog(logFrom, `"level":"WARN"`); k > 0 {
			res.notef("%d WARN lines in the gateway's log since the crash, e.g. %s", k, tail(line, 200))
		}
		_ = b.Leave(closeClean)
		res.check(g.waitClients(ctx, inst, 0, settleWait), "detach")
		r.finish(ctx, g, res, base)
		r.sigtermClean(ctx, g, eng, names, res)
	}
}
