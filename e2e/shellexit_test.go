package e2e

import (
	"strings"
	"testing"
)

// Session semantics 7: when the shell exits, the session ends for every
// client (SSH: its exit status; WebSocket: an exit event) and what it
// started is ended, ordinary and durable alike: a background job that
// keeps the terminal open does not keep the session (issue 34 item 2).
// Real engine, real OpenSSH (ssh -tt) and a WebSocket client on the same
// session; afterwards nothing of the session runs in the container.
func TestShellExitEndsTheSession(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	cells := []struct {
		suffix string
		job    string // typed before the exit; "" for none
	}{
		{"web-exit", ""},
		{"web-job", "(while true; do sleep 2; done) &"},
		{"web-setsid", "setsid sh -c 'while true; do sleep 2; done' &"}, // another session, the terminal still open
	}
	var suffixes []string
	for _, c := range cells {
		suffixes = append(suffixes, c.suffix)
	}
	for _, durable := range []bool{false, true} {
		mode := map[bool]string{false: "ordinary", true: "durable"}[durable]
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var g *gateway
			if durable {
				g = durableGateway(t, options{containers: suffixes}).gateway
			} else {
				g = newGateway(t, options{containers: suffixes})
			}
			home := t.TempDir()
			for _, c := range cells {
				name := g.name(c.suffix)
				t.Run(c.suffix, func(t *testing.T) {
					t.Parallel()
					shellExits(t, g, sshBin, home, name, c.job, durable)
				})
			}
		})
	}
}

// shellExits attaches an OpenSSH and a WebSocket client to name's session,
// starts job (when not ""), has the shell exit 3 and checks what both
// clients see and that nothing of the session is left in the container.
func shellExits(t *testing.T, g *gateway, sshBin, home, name, job string, durable bool) {
	t.Helper()
	s := g.openssh(t, sshBin, home, "-tt", name+"@127.0.0.1")
	s.typeIn("echo PID=$$\n")
	pid := atoi(t, s.expect(`PID=(\d+)`)[1])
	w := g.ws(t, tokAdmin, name)
	g.waitClients(t, name, 2)
	if durable {
		expectDurable(t, g, name, "", true)
	}
	if job != "" {
		s.typeIn(job + "\n")
		eventually(t, "the job to run in "+name, func() bool { return len(findProcesses(t, name, -1, "sleep 2")) > 0 })
	}
	s.typeIn("echo good\"\"bye; exit 3\n")
	s.expect(`goodbye`)
	if code := s.wait(); code != 3 {
		t.Errorf("ssh after `exit 3`: status %d, want 3; stderr %q", code, s.errOut)
	}
	w.expect(`goodbye`)
	for {
		ev := w.nextEvent() // bounded by waitFor
		if ev.Type == "exit" {
			if ev.Code != 3 {
				t.Errorf("the WebSocket exit event %s, want code 3", ev.raw)
			}
			break
		}
	}
	w.waitClosed()

	// Nothing of the session is left: the shell, its job, every marked
	// process and, for a durable session, its holder.
	waitGone(t, name, pid)
	waitGone(t, name, -1, "sleep 2", "while true")
	eventually(t, "no marked process left in "+name, func() bool { return len(markedProcesses(t, name)) == 0 })
	if durable {
		waitGone(t, name, -1, "serve --key-stdin") // the holder daemon
	}
	eventually(t, "the session to leave the list", func() bool {
		_, ok := g.session(t, name)
		return !ok
	})
	if r := g.ssh(t, keyAdmin, "me", "list"); r.code != 0 || strings.Contains(r.stdout, name) {
		t.Errorf("list after the exit: status %d, %q; want 0 without %s", r.code, r.stdout, name)
	}
}
