package e2e

import (
	"context"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 20, D2: a paused container (docker pause, and docker commit, which
// pauses) is not a stopped one. Its session is kept: the attached SSH and
// WebSocket clients are told and stay attached, a new attach and a reset
// are refused as paused (not "not found"), and after the unpause the same
// shell answers (same PID), with no second shell beside it; a durable
// shell is not killed after the unpause either.
func TestPauseKeepsTheSession(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		name := "ordinary"
		if durable {
			name = "durable"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := options{containers: []string{"pause"}}
			var g *gateway
			if durable {
				g = durableGateway(t, o).gateway
			} else {
				g = newGateway(t, o)
			}
			inst := g.name("pause")
			w := g.ws(t, tokAdmin, inst)
			s := g.attach(t, keyAdmin, inst, 80, 24)
			g.waitClients(t, inst, 2)
			pid := s.pid()
			before, _ := g.session(t, inst)

			dockerCLI(t, "pause", inst)
			if ev := w.nextEvent(); ev.Type != "error" || !strings.Contains(ev.Message, "paused") {
				t.Errorf("the WebSocket client got %s, want an error event saying the instance paused", ev.raw)
			}
			noticeRe := regexp.MustCompile(`\[termgate\] instance paused`)
			if m, _ := s.out.waitFor(noticeRe, s.seen); m == nil {
				t.Errorf("the SSH client got no paused notice: %q", anyNotice(s))
			}

			// Refused as paused, never as missing, while frozen.
			if r := g.ssh(t, keyAdmin, inst, ""); r.code != 1 || !strings.Contains(r.stderr, `instance "`+inst+`" is paused`) {
				t.Errorf("SSH attach while paused: status %d, stderr %q; want 1 and the paused message", r.code, r.stderr)
			}
			_, resp, err := g.dialWS(t, inst, "", bearer(g.tokens[tokAdmin]))
			if err == nil || resp == nil || resp.StatusCode != http.StatusConflict || !strings.Contains(describeResponse(resp), "paused") {
				t.Errorf("WebSocket attach while paused: %v (%s); want 409 saying paused", err, describeResponse(resp))
			}
			if r := g.ssh(t, keyAdmin, "me", "reset "+inst); r.code != 1 || !strings.Contains(r.stderr, "paused") {
				t.Errorf("SSH reset while paused: status %d, stderr %q; want 1 and the paused message", r.code, r.stderr)
			}
			if status, body := g.resetHTTP(t, tokAdmin, inst); status != http.StatusConflict || !strings.Contains(body["error"], "paused") {
				t.Errorf("HTTP reset while paused: %d %v; want 409 saying paused", status, body)
			}

			dockerCLI(t, "unpause", inst)
			if ev := w.nextEvent(); ev.Type != "error" || !strings.Contains(ev.Message, "unpaused") {
				t.Errorf("the WebSocket client got %s, want an event saying the instance runs again", ev.raw)
			}
			if got := s.pid(); got != pid {
				t.Fatalf("after the unpause the SSH client reaches shell %d, want the same shell %d", got, pid)
			}
			w.send("echo ws$((1000+1))=$$")
			if got := w.expect(`ws1001=(\d+)`)[1]; got != strconv.Itoa(pid) {
				t.Errorf("after the unpause the WebSocket client reaches shell %s, want %d", got, pid)
			}
			if after, _ := g.session(t, inst); after.Session != before.Session || after.Clients != 2 {
				t.Errorf("after the unpause: session %s with %d clients, want %s with 2", after.Session, after.Clients, before.Session)
			}
			if got := sessionMarkers(t, inst); len(got) != 1 || got[0] != before.Session {
				t.Errorf("processes of sessions %v in the container, want only %s", got, before.Session)
			}

			// docker commit pauses too: the session goes on through it.
			img := "tge2e-commit-" + randomHex(t, 4)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitFor)
				defer cancel()
				_, _ = docker(ctx, "rmi", "-f", img)
			})
			dockerCLI(t, "commit", inst, img)
			if got := s.pid(); got != pid {
				t.Fatalf("after docker commit the SSH client reaches shell %d, want %d", got, pid)
			}
			w.roundTrip()

			// A reset once it runs again works and leaves one shell.
			if r := g.ssh(t, keyAdmin, "me", "reset "+inst); r.code != 0 {
				t.Fatalf("reset after the unpause: status %d, stderr %q", r.code, r.stderr)
			}
			after, _ := g.session(t, inst)
			eventually(t, "only the fresh session's shell in the container", func() bool {
				got := sessionMarkers(t, inst)
				return len(got) == 1 && got[0] == after.Session
			})
			if shellAlive(t, inst, pid) {
				t.Errorf("the old shell %d still runs after the reset", pid)
			}
		})
	}
}

// dockerCLI runs the docker CLI and fails the test on an error.
func dockerCLI(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := docker(ctx, args...); err != nil {
		t.Fatal(err)
	}
}

// sessionMarkers lists the session IDs that the container's live processes
// carry (TERMGATE_SESSION, without the gateway ID), sorted.
func sessionMarkers(t *testing.T, name string) []string {
	t.Helper()
	out := dockerExec(t, name, `for d in /proc/[0-9]*; do
	tr '\0' '\n' <"$d/environ" 2>/dev/null | grep '^TERMGATE_SESSION='
done | sort -u`)
	var ids []string
	for _, l := range nonEmptyLines(out) {
		v := strings.TrimPrefix(strings.TrimSpace(l), "TERMGATE_SESSION=")
		if i := strings.LastIndexByte(v, '.'); i >= 0 {
			v = v[i+1:]
		}
		ids = append(ids, v)
	}
	sort.Strings(ids)
	return ids
}

// The stress report's repro of a leak (issue 20, D2): an ordinary session
// whose kill fails because its container is paused (here: its idle reap)
// is not taken for ended. The kill is retried when the container is
// unpaused, so the next attach never makes a second shell beside the old
// one.
func TestKillFailedWhilePausedIsRetriedOnUnpause(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{idleTimeout: 2 * time.Second, containers: []string{"reap"}})
	inst := g.name("reap")
	s := g.attach(t, keyAdmin, inst, 80, 24)
	pid := s.pid()
	dockerCLI(t, "pause", inst)
	s.close() // the reap comes 2 s later, into a frozen container
	if m, _ := g.logs.WaitFor(regexp.MustCompile(`kill session processes failed; retrying`), 0, waitFor); m == nil {
		t.Fatalf("no failed kill logged while paused:\n%s", g.logs.String())
	}
	if strings.Contains(g.logs.String(), "ended with it") {
		t.Errorf("a kill that failed was logged as done")
	}
	dockerCLI(t, "unpause", inst)
	unpaused := time.Now()
	waitGone(t, inst, pid)
	t.Logf("the old shell ended %v after the unpause", time.Since(unpaused).Round(time.Millisecond))
	n := g.attach(t, keyAdmin, inst, 80, 24)
	if got := n.pid(); got == pid {
		t.Fatalf("the attach after the reap reached the old shell %d", pid)
	}
	fresh, _ := g.session(t, inst)
	if got := sessionMarkers(t, inst); len(got) != 1 || got[0] != fresh.Session {
		t.Errorf("processes of sessions %v in the container, want only the fresh %s", got, fresh.Session)
	}
}
