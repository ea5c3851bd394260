package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// Scenario 4: reset through each of its four routes kills the shell and
// every process it started (background and setsid jobs), starts a fresh
// shell and moves the attached clients to it.
func TestResetRoutes(t *testing.T) {
	t.Parallel()
	routes := []struct {
		name string
		// reset resets the instance and returns the new session id it
		// reports ("" when it reports none beyond the WebSocket event).
		reset func(t *testing.T, g *gateway, instance string, w *wsClient) string
	}{
		{"websocket control", func(t *testing.T, g *gateway, instance string, w *wsClient) string {
			w.control(`{"type":"reset"}`)
			return ""
		}},
		{"http post", func(t *testing.T, g *gateway, instance string, w *wsClient) string {
			status, body := g.resetHTTP(t, tokAdmin, instance)
			if status != http.StatusOK || body["instance"] != instance || body["session"] == "" {
				t.Fatalf("POST reset: %d %v, want 200 with instance %s and a session", status, body, instance)
			}
			return body["session"]
		}},
		{"ssh reset NAME", func(t *testing.T, g *gateway, instance string, w *wsClient) string {
			return sshReset(t, g, "whoever", "reset "+instance, instance)
		}},
		{"ssh NAME@ reset", func(t *testing.T, g *gateway, instance string, w *wsClient) string {
			return sshReset(t, g, instance, "reset", instance)
		}},
	}
	var suffixes []string
	for i := range routes {
		suffixes = append(suffixes, "web-reset"+string(rune('a'+i)))
	}
	g := newGateway(t, options{containers: append(suffixes, "web-fresh")})
	t.Run("without a session", func(t *testing.T) {
		t.Parallel()
		name := g.name("web-fresh")
		status, body := g.resetHTTP(t, tokAdmin, name)
		if status != http.StatusOK || body["session"] == "" {
			t.Fatalf("POST reset of an instance without a session: %d %v, want 200 and a session", status, body)
		}
		if info, ok := g.session(t, name); !ok || info.Session != body["session"] || info.Clients != 0 {
			t.Errorf("after the reset the session table says %+v (present %v), want session %s with no client", info, ok, body["session"])
		}
		w := g.ws(t, tokAdmin, name)
		if w.attached.New || w.attached.Session != body["session"] {
			t.Errorf("attach after the reset: %s, want new:false in session %s", w.attached.raw, body["session"])
		}
		w.roundTrip()
	})
	for i, r := range routes {
		name := g.name(suffixes[i])
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := g.ws(t, tokAdmin, name)
			s := g.attach(t, keyAdmin, name, 80, 24)
			g.waitClients(t, name, 2)
			oldPID := s.pid()
			s.send("sleep 1001 &")
			s.send("setsid sleep 1002 &")
			s.roundTrip()
			eventually(t, "the shell's jobs to run", func() bool {
				return len(findProcesses(t, name, -1, "sleep 1001")) == 1 && len(findProcesses(t, name, -1, "sleep 1002")) == 1
			})

			reported := r.reset(t, g, name, w)

			ev := w.nextEvent()
			if ev.Type != "reset" || ev.Session == "" || ev.Session == w.attached.Session {
				t.Fatalf("the attached WebSocket client got %s, want a reset event with a new session (old %s)", ev.raw, w.attached.Session)
			}
			if reported != "" && !strings.Contains(reported, ev.Session) {
				t.Errorf("the reset reported %q, the WebSocket client was moved to session %s", reported, ev.Session)
			}
			s.expect(`\[termgate\][^\r\n]*reset`)
			newPID := s.pid()
			if newPID == oldPID {
				t.Fatalf("after the reset the SSH client's shell is still %d", oldPID)
			}
			w.send("echo wspid=$$")
			if got := atoi(t, w.expect(`wspid=(\d+)`)[1]); got != newPID {
				t.Errorf("after the reset the WebSocket client types into shell %d, the SSH client into %d", got, newPID)
			}
			waitGone(t, name, oldPID, "sleep 1001", "sleep 1002")
			if info, ok := g.session(t, name); !ok || info.Session != ev.Session || info.Clients != 2 {
				t.Errorf("after the reset the session table says %+v, want session %s with both clients", info, ev.Session)
			}

			// The fresh session's replay holds nothing of the old one.
			late := g.ws(t, tokAdmin, name)
			if late.attached.Session != ev.Session || late.attached.New {
				t.Errorf("a client attaching after the reset got %s, want session %s, new:false", late.attached.raw, ev.Session)
			}
			late.roundTrip()
			if out := late.out.String(); strings.Contains(out, "sleep 1001") {
				t.Errorf("the replay after a reset holds the old session's output: %q", out)
			}
		})
	}
}

// sshReset runs an SSH reset command and checks its contract: exit status
// 0, one line on stdout. It returns that line.
func sshReset(t *testing.T, g *gateway, user, cmd, instance string) string {
	t.Helper()
	r := g.ssh(t, keyAdmin, user, cmd)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.HasSuffix(r.stdout, "\n") || !strings.Contains(r.stdout, instance) {
		t.Fatalf("ssh %s@ %q: status %d, stdout %q, stderr %q; want 0 and a one-line confirmation naming %s", user, cmd, r.code, r.stdout, r.stderr, instance)
	}
	return r.stdout
}
