package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tmuxRun is one tmux server of a test's own (-L socket name), with one
// pane that runs a command in a real pseudo-terminal, as a user's
// terminal does: tmux answers the cursor position reports a prompt asks
// for.
type tmuxRun struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T, cmd []string, env []string) *tmuxRun {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("no tmux (apt-get install tmux): %v", err)
	}
	tm := &tmuxRun{t: t, sock: "tg-" + randomHex(t, 6)}
	args := append([]string{"new-session", "-d", "-x", "80", "-y", "24", "-s", "s", "--",
		"/bin/sh", "-c", `"$@"; echo "[exited $?]"; sleep 600`, "sh"}, cmd...)
	if out, err := tm.cmd(env, args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = tm.cmd(nil, "kill-server").Run() })
	return tm
}

func (tm *tmuxRun) cmd(env []string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tm.t.Cleanup(cancel)
	c := exec.CommandContext(ctx, "tmux", append([]string{"-L", tm.sock, "-f", "/dev/null"}, args...)...)
	if env != nil {
		c.Env = env
	}
	return c
}

// keys types keys (tmux send-keys -l: literally), or Enter.
func (tm *tmuxRun) keys(k string) {
	tm.t.Helper()
	args := []string{"send-keys", "-t", "s", "-l", k}
	if k == "Enter" {
		args = []string{"send-keys", "-t", "s", "Enter"}
	}
	if out, err := tm.cmd(nil, args...).CombinedOutput(); err != nil {
		tm.t.Fatalf("tmux send-keys %q: %v: %s", k, err, out)
	}
}

func (tm *tmuxRun) screen() string {
	out, _ := tm.cmd(nil, "capture-pane", "-p", "-t", "s").Output()
	return string(out)
}

// waitScreen waits for the pane to show want.
func (tm *tmuxRun) waitScreen(want string) {
	tm.t.Helper()
	for deadline := time.Now().Add(waitFor); !strings.Contains(tm.screen(), want); {
		if time.Now().After(deadline) {
			tm.t.Fatalf("the terminal never showed %q:\n%s", want, tm.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exited waits for the pane's command to end and returns its status,
// which the pane prints (newTmux runs it under sh for that: tmux's own
// pane_dead_status is sometimes still empty when the pane is dead).
func (tm *tmuxRun) exited() string {
	tm.t.Helper()
	re := regexp.MustCompile(`\[exited (\d+)\]`)
	for deadline := time.Now().Add(waitFor); ; {
		if m := re.FindStringSubmatch(tm.screen()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("ssh did not exit; the terminal:\n%s", tm.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDetachTildeDotInBusybox: the walk-through's detach, as a user does
// it: real OpenSSH in a real terminal (tmux), busybox's shell, Enter,
// then ~ and . at human speed. busybox's prompt asks the terminal for the
// cursor position after every Enter, the answer reaches ssh before the ~,
// and ssh passes ~. on (before: "sh: ~.: not found"); the gateway detaches
// (status 0 and its notice, where ssh's own ~. gives 255), and the shell
// keeps running.
func TestDetachTildeDotInBusybox(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	g := newGateway(t, options{containers: []string{"web-tilde"}})
	name := g.name("web-tilde")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	ssh := g.sshCommand(t, ctx, sshBin, keyAdmin, "-t", name+"@127.0.0.1")
	tm := newTmux(t, ssh.Args, ssh.Env)

	tm.keys("echo pid=$$")
	tm.keys("Enter")
	tm.waitScreen("pid=")
	s := g.waitClients(t, name, 1)
	time.Sleep(400 * time.Millisecond) // a person reads the output first
	tm.keys("~")
	time.Sleep(150 * time.Millisecond)
	tm.keys(".")
	if code := tm.exited(); code != "0" {
		t.Fatalf("ssh after Enter ~ . exited with %s, want 0 (the gateway's detach); the terminal:\n%s", code, tm.screen())
	}
	if sc := tm.screen(); !strings.Contains(sc, "[termgate] detached; the shell keeps running") || strings.Contains(sc, "not found") {
		t.Fatalf("the terminal after ~.:\n%s", sc)
	}
	after := g.waitClients(t, name, 0)
	if after.Session != s.Session {
		t.Fatalf("after ~. the session is %q, want %q still running", after.Session, s.Session)
	}
}
