package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The durable faults of issue 20: a holder killed, its socket deleted, a
// paused (and committed) container. Each starts from one streaming session
// of a --durable gateway (startStreams), breaks something in the container
// and checks what the clients are told and what is left in it.

// holderScript prints the PIDs of the holder daemons in the container:
// "./holder-HASH serve --socket ...", without the --attach of the start
// exec that started it (which stays as its first gateway's bridge).
const holderScript = `for d in /proc/[0-9]*; do
	c=" $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) " || continue
	case "$c" in *" --attach "*) continue ;; esac
	case "$c" in *holder-*" serve "*"--socket "*) echo "${d#/proc/}" ;; esac
done`

// inContainer runs a shell command in a container of the main engine.
func (r *runner) inContainer(ctx context.Context, inst, script string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, dockerWait)
	defer cancel()
	return r.e.main.docker(cctx, "exec", inst, "sh", "-c", script)
}

// heldSession starts a durable gateway (name) and one container with a
// streaming session in it, plus the jobs given.
func (r *runner) heldSession(ctx context.Context, res *result, name, jobs string) (*gateway, *durableStream, bool) {
	g, err := r.durableGateway(name)
	if !res.check(err, "prepare a gateway") {
		return nil, nil, false
	}
	if !res.check(g.start(ctx), "start the gateway") {
		return g, nil, false
	}
	names, err := r.e.startContainers(ctx, r.e.main, name, 1)
	if !res.check(err, "start a container") {
		return g, nil, false
	}
	streams, ok := startStreams(ctx, g, names, res)
	if len(streams) == 0 {
		return g, nil, false
	}
	s := streams[0]
	if ok && jobs != "" {
		_, err := s.rec.t.Write([]byte(jobs + "\n"))
		ok = res.check(err, "start the jobs")
	}
	time.Sleep(time.Second)
	return g, s, ok
}

// caseHolderKill kills the holder with SIGKILL inside the container: the
// client is told that the holder died and the shell ended, none of the
// session's jobs is left (one that ignores SIGHUP, a setsid one), and the next
// attach gets one fresh shell.
func caseHolderKill(ctx context.Context, r *runner, res *result) {
	g, s, ok := r.heldSession(ctx, res, "holderkill", "(trap '' HUP; while :; do sleep 0.7001; done) & setsid sleep 7002 &")
	if g != nil {
		defer g.kill9()
	}
	if s != nil {
		defer leaveStreams([]*durableStream{s})
	}
	if !ok {
		return
	}
	jobs := func(c census) int { return c.count("sleep 0.7001") + c.count("sleep 7002") }
	if c, err := r.e.main.waitCensus(ctx, s.inst, 10*time.Second, func(c census) bool { return jobs(c) == 2 }); !res.check(err, "the jobs run") {
		return
	} else {
		res.notef("before: %s", c)
	}
	pids, err := r.inContainer(ctx, s.inst, holderScript)
	if !res.check(err, "find the holder") {
		return
	}
	if f := strings.Fields(pids); len(f) != 1 {
		res.failf("want one holder in %s, found %q", s.inst, pids)
		return
	}
	start := time.Now()
	if _, err := r.inContainer(ctx, s.inst, "kill -9 "+strings.TrimSpace(pids)); !res.check(err, "kill -9 the holder") {
		return
	}
	select {
	case <-s.rec.done:
		told := ""
		if n := len(s.rec.events); n > 1 {
			told = s.rec.events[n-1].Message
		}
		res.notef("client told %q %s after the holder's SIGKILL", told, time.Since(start).Round(time.Millisecond))
		if !strings.Contains(told, "holder") || strings.Contains(told, "keeps running") {
			res.failf("the client was told %q, want that the session's holder died", told)
		}
	case <-time.After(20 * time.Second):
		res.failf("the client is still attached 20 s after the holder's SIGKILL")
		return
	}
	s.rec = nil
	_, err = r.e.main.waitCensus(ctx, s.inst, 20*time.Second, func(c census) bool { return jobs(c) == 0 })
	res.check(err, "no job of the dead holder's session left")
	t, err := g.attachWS(ctx, s.inst)
	if !res.check(err, "attach after the holder died") {
		return
	}
	defer t.Leave(closeRST)
	if ev := t.events[0]; ev.Session == s.session {
		res.failf("attached %+v after the holder died: the old session", ev)
	}
	c := r.oneShell(ctx, r.e.main, s.inst, res)
	if n := jobs(c); n > 0 {
		res.failf("%d jobs of the dead holder's session beside the new shell: %s", n, c)
	}
}

// caseSocketGone deletes the holder's socket (as a tmp cleaner would):
// an attach, a reset and a restarted gateway's adoption must each finish
// within a bound, with the session or a clear message, and leave one shell.
func caseSocketGone(ctx context.Context, r *runner, res *result) {
	g, s, ok := r.heldSession(ctx, res, "sockgone", "")
	if g != nil {
		defer g.kill9()
	}
	if s != nil {
		defer leaveStreams([]*durableStream{s})
	}
	if !ok {
		return
	}
	if _, err := r.inContainer(ctx, s.inst, "rm -f /*/.termgate/holder.sock /.termgate/holder.sock"); !res.check(err, "delete the socket") {
		return
	}
	const bound = 20 * time.Second
	step := func(what string, f func(context.Context) error) {
		sctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		t0 := time.Now()
		err := f(sctx)
		took := time.Since(t0).Round(time.Millisecond)
		if sctx.Err() != nil {
			res.failf("%s with the holder's socket deleted: no answer within %s", what, bound)
			return
		}
		res.notef("%s with the socket deleted: %s (%v)", what, took, err)
	}
	step("attach", func(ctx context.Context) error {
		t, err := g.attachWS(ctx, s.inst)
		if err == nil {
			res.notef("attached %+v", t.events[0])
			_ = t.Leave(closeRST)
		}
		return err
	})
	step("reset", func(ctx context.Context) error {
		status, body, err := g.request(ctx, http.MethodPost, "/api/instances/"+s.inst+"/terminal/reset")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("%d %s", status, strings.TrimSpace(string(body)))
		}
		return err
	})
	leaveStreams([]*durableStream{s})
	g.kill9()
	step("restart and adopt", func(ctx context.Context) error {
		if err := g.start(ctx); err != nil {
			return err
		}
		t, err := g.attachWS(ctx, s.inst)
		if err == nil {
			_ = t.Leave(closeRST)
		}
		return err
	})
	r.oneShell(ctx, r.e.main, s.inst, res)
}

// casePause pauses an attached container (docker pause, then docker
// commit, which pauses too), with an ordinary and a durable session: the
// clients stay attached and are told, a new attach is refused as paused,
// and after the unpause the same shell goes on (its counter continues).
func casePause(ctx context.Context, r *runner, res *result) {
	for _, durable := range []bool{false, true} {
		var g *gateway
		var err error
		if durable {
			g, err = r.durableGateway("pause")
		} else {
			g, err = r.e.newGateway("pause", r.e.main, "--replay", "raw")
		}
		if !res.check(err, "prepare a gateway") || !res.check(g.start(ctx), "start the gateway") {
			return
		}
		pauseOnce(ctx, r, g, durable, res)
		g.kill9()
	}
}

func pauseOnce(ctx context.Context, r *runner, g *gateway, durable bool, res *result) {
	kind := map[bool]string{false: "ordinary", true: "durable"}[durable]
	names, err := r.e.startContainers(ctx, r.e.main, "pause", 1)
	if !res.check(err, "start a container") {
		return
	}
	streams, ok := startStreams(ctx, g, names, res)
	defer leaveStreams(streams)
	if !ok {
		return
	}
	s := streams[0]
	time.Sleep(time.Second)
	docker := func(args ...string) error {
		cctx, cancel := context.WithTimeout(ctx, dockerWait)
		defer cancel()
		_, err := r.e.main.docker(cctx, args...)
		return err
	}
	if !res.check(docker("pause", s.inst), "docker pause") {
		return
	}
	if ev, ok := s.rec.waitEvent("error", 1, 10*time.Second); !ok || !strings.Contains(ev.Message, "paused") {
		res.failf("%s: the attached client was not told the instance is paused (%+v)", kind, ev)
	}
	if t, err := g.attachWS(ctx, s.inst); err == nil {
		_ = t.Leave(closeRST)
		res.failf("%s: an attach while paused was let in", kind)
	} else if !strings.Contains(err.Error(), "paused") {
		res.failf("%s: an attach while paused was refused with %v, want that it is paused", kind, err)
	}
	time.Sleep(2 * time.Second)
	if !res.check(docker("unpause", s.inst), "docker unpause") {
		return
	}
	if !res.check(docker("commit", s.inst, "tgsoak-"+r.e.runID+"-commit:"+kind), "docker commit") {
		return
	}
	_ = docker("rmi", "tgsoak-"+r.e.runID+"-commit:"+kind)
	time.Sleep(2 * time.Second)
	select {
	case <-s.rec.done:
		res.failf("%s: the client was disconnected by the pause: %v", kind, s.rec.err)
		return
	default:
	}
	n, err := checkSeq(s.rec.bytes())
	if !res.check(err, kind+": the counter across pause, unpause and commit") {
		return
	}
	res.notef("%s: %d counter lines, none lost or repeated, through pause, unpause and commit", kind, n)
	// The counter is a subshell: one session, not one shell.
	c, err := r.e.main.waitCensus(ctx, s.inst, 10*time.Second, func(c census) bool { return c.Sessions == 1 })
	res.Shells = fmt.Sprintf("%d sessions", c.Sessions)
	res.check(err, kind+": one session after the pause")
}
