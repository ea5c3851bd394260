package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
)

// Scenario 8: the same user journey through the OpenSSH client: attach,
// type, detach with ~., reattach to the same shell, get the shell's exit
// status, reset.
func TestOpenSSH(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	g := newGateway(t, options{containers: []string{"web-ossh"}})
	name := g.name("web-ossh")
	home := t.TempDir()
	start := func(args ...string) *opensshRun { t.Helper(); return g.openssh(t, sshBin, home, args...) }

	// Attach, type, detach with ~. (the shell keeps running).
	first := start("-tt", name+"@127.0.0.1")
	first.typeIn("echo PID=$$\n")
	pid := first.expect(`PID=(\d+)`)[1]
	cmd, word := marker("ossh")
	first.typeIn(cmd + "\n")
	first.expect(regexp.QuoteMeta(word))
	first.typeIn("\n~.")
	if code := first.wait(); code != 255 {
		t.Errorf("ssh after ~.: status %d, want 255 (connection closed by the client)", code)
	}
	g.waitClients(t, name, 0)
	if len(findProcesses(t, name, atoi(t, pid))) == 0 {
		t.Fatalf("after ~. the shell %s is gone", pid)
	}

	// Reattach: the replay, the same shell; its exit status is ssh's.
	second := start("-tt", name+"@127.0.0.1")
	second.expect(regexp.QuoteMeta(word)) // replayed
	second.typeIn("echo PID=$$\n")
	if again := second.expect(`PID=(\d+)`)[1]; again != pid {
		t.Errorf("after reattaching the shell is %s, want %s", again, pid)
	}
	second.typeIn("exit 7\n")
	if code := second.wait(); code != 7 {
		t.Errorf("ssh after `exit 7`: status %d, want 7; stderr %q", code, second.errOut)
	}

	// A fresh session; reset it with both command forms.
	third := start("-tt", name+"@127.0.0.1")
	third.typeIn("echo PID=$$\n")
	if fresh := third.expect(`PID=(\d+)`)[1]; fresh == pid {
		t.Errorf("after the shell exited, a new attach landed in shell %s again", pid)
	}
	for _, argv := range [][]string{{"someone@127.0.0.1", "reset", name}, {name + "@127.0.0.1", "reset"}} {
		r := start(argv...)
		_ = r.stdin.Close()
		code := r.wait()
		if out := r.out.String(); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, name) {
			t.Errorf("ssh %v: status %d, stdout %q, stderr %q; want 0 and a one-line confirmation", argv, code, out, r.errOut)
		}
		third.expect(`\[termgate\][^\r\n]*reset`)
	}
	third.typeIn("echo PID=$$\n")
	third.expect(`PID=\d+`)

	// Refusals keep OpenSSH's conventions: a message on stderr and status 1.
	r := start("-tt", g.name("nope")+"@127.0.0.1")
	_ = r.stdin.Close()
	if code := r.wait(); code != 1 || !strings.Contains(r.out.String()+r.errOut.String(), `instance "`+g.name("nope")+`" not found or not running`) {
		t.Errorf("ssh to an unknown instance: status %d, output %q %q", code, r.out, r.errOut)
	}
}

// openssh runs sshBin as the admin key against g, with a pipe as its
// input and HOME set to home; the run is bounded by waitFor.
func (g *gateway) openssh(t *testing.T, sshBin, home string, args ...string) *opensshRun {
	t.Helper()
	return g.opensshWithin(t, waitFor, sshBin, home, args...)
}

// opensshWithin is openssh with the run bounded by within (a scenario
// that outlasts waitFor, such as a stall).
func (g *gateway) opensshWithin(t *testing.T, within time.Duration, sshBin, home string, args ...string) *opensshRun {
	t.Helper()
	return g.opensshAs(t, keyAdmin, within, sshBin, home, args...)
}

// opensshAs is opensshWithin with the key named key.
func (g *gateway) opensshAs(t *testing.T, key string, within time.Duration, sshBin, home string, args ...string) *opensshRun {
	t.Helper()
	_, port, _ := net.SplitHostPort(g.sshAddr)
	base := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", g.keyFiles[key], "-p", port}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	cmd := exec.CommandContext(ctx, sshBin, append(base, args...)...)
	cmd.Env = append(sshEnv(home), "TERM=xterm")
	r := &opensshRun{t: t, cmd: cmd, out: newStream(), errOut: &termtest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.errOut
	var err error
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		r.err = cmd.Wait()
		cancel()
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// needOpenSSH returns the ssh binary, or skips t without one (fails it
// with TERMGATE_REQUIRE_OPENSSH=1).
func needOpenSSH(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but there is no OpenSSH client: %v (install openssh-client)", err)
		}
		t.Skipf("no OpenSSH client (%v); set TERMGATE_REQUIRE_OPENSSH=1 to make this a failure", err)
	}
	return path
}

// opensshRun is a running ssh process.
type opensshRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *stream
	errOut *termtest.SyncBuffer
	seen   int
	done   chan struct{} // closed when cmd.Wait returned
	err    error         // cmd.Wait's result; read after done
}

func (r *opensshRun) typeIn(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, s); err != nil {
		r.t.Fatalf("ssh: type %q: %v", s, err)
	}
}

func (r *opensshRun) expect(re string) []string {
	r.t.Helper()
	m, at := r.out.waitFor(regexp.MustCompile(re), r.seen)
	if m == nil {
		r.t.Fatalf("ssh: no %q in the output within %s:\n%q\nstderr: %q", re, waitFor, r.out.String()[r.seen:], r.errOut)
	}
	r.seen = at
	return m
}

// wait waits (bounded by the command's context, which kills ssh) for ssh
// to exit and returns its status.
func (r *opensshRun) wait() int {
	r.t.Helper()
	<-r.done
	err := r.err
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	r.t.Fatalf("ssh %v: %v; stdout %q, stderr %q", r.cmd.Args[len(r.cmd.Args)-1], err, r.out, r.errOut)
	return -1
}

// sshEnv is the test's environment without TERMGATE_* and with HOME set to
// home (keeps ssh from reading the real ~/.ssh).
func sshEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TERMGATE_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}
