package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/termtest"
)

// sshCommand is the OpenSSH client with the gateway's test options, key
// key, and args (user@host and the command).
func (g *gateway) sshCommand(t *testing.T, ctx context.Context, sshBin, key string, args ...string) *exec.Cmd {
	_, port, _ := net.SplitHostPort(g.sshAddr)
	base := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-o", "SendEnv=LC_TERMGATE_TEST", "-i", g.keyFiles[key], "-p", port}
	cmd := exec.CommandContext(ctx, sshBin, append(base, args...)...)
	cmd.Env = append(sshEnv(t.TempDir()), "TERM=xterm", "LC_TERMGATE_TEST=yes")
	return cmd
}

// sshRun runs ssh to completion with stdin; it returns stdout, stderr and
// the exit status.
func (g *gateway) sshRun(t *testing.T, sshBin, key string, stdin []byte, args ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := g.sshCommand(t, ctx, sshBin, key, args...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		code = ee.ExitCode()
	default:
		t.Fatalf("ssh %v: %v; stderr %q", args, err, errOut.String())
	}
	return out.Bytes(), errOut.Bytes(), code
}

// TestCommand: ssh INSTANCE@HOST CMD through OpenSSH against a container:
// stdout and stderr apart and the exit status, stdin byte-exact to its EOF,
// a terminal with -tt, the command and its jobs gone once the client is,
// the session untouched, and instances= refusals.
func TestCommand(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	g := newGateway(t, options{containers: []string{"web-cmd"}})
	name := g.name("web-cmd")
	host := name + "@127.0.0.1"

	// The persistent session, to check it is left alone.
	sh := g.attach(t, keyAdmin, name, 80, 24)
	sh.send("echo PID=$$")
	pid := sh.expect(`PID=(\d+)`)[1]

	out, errOut, code := g.sshRun(t, sshBin, keyAdmin, nil, host, "echo out; echo err >&2; echo $LC_TERMGATE_TEST; exit 3")
	if code != 3 || string(out) != "out\nyes\n" || string(errOut) != "err\n" {
		t.Errorf("echo: status %d, stdout %q, stderr %q; want 3, \"out\\nyes\\n\", \"err\\n\"", code, out, errOut)
	}

	small := []byte("abc")
	if out, errOut, code = g.sshRun(t, sshBin, keyAdmin, small, host, "cat"); code != 0 || !bytes.Equal(out, small) {
		t.Errorf("printf abc | ssh cat: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	big := make([]byte, 3<<20+17)
	_, _ = rand.Read(big)
	want := sha256.Sum256(big)
	out, errOut, code = g.sshRun(t, sshBin, keyAdmin, big, host, "cat")
	if code != 0 || len(out) != len(big) || sha256.Sum256(out) != want {
		t.Errorf("3 MiB | ssh cat: status %d, %d bytes back of %d (sha256 equal %v), stderr %q", code, len(out), len(big), sha256.Sum256(out) == want, errOut)
	}

	if out, errOut, code = g.sshRun(t, sshBin, keyAdmin, nil, "-tt", host, "tty; echo $TERM"); code != 0 || !regexp.MustCompile(`^/dev/pts/\d+\r\nxterm\r\n$`).Match(out) {
		t.Errorf("ssh -tt tty: status %d, stdout %q, stderr %q", code, out, errOut)
	}

	// The client goes away while the command and its jobs run.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := g.sshCommand(t, ctx, sshBin, keyAdmin, host, "sleep 1017 & sleep 1018 & echo started; wait")
	stdout := newStream()
	cmd.Stdout, cmd.Stderr = stdout, &termtest.SyncBuffer{}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if m, _ := stdout.waitFor(regexp.MustCompile(`started`), 0); m == nil {
		t.Fatalf("the command did not start: %q", stdout.String())
	}
	if len(findProcesses(t, name, -1, "sleep 1017", "sleep 1018")) < 3 { // sh and its two jobs
		t.Fatalf("the jobs do not run: %v", processes(t, name))
	}
	_ = cmd.Process.Kill()
	_ = stdin.Close()
	_ = cmd.Wait()
	waitGone(t, name, -1, "sleep 1017", "sleep 1018")

	// The session is the same shell, still answering.
	sh.send("echo PID=$$")
	if again := sh.expect(`PID=(\d+)`)[1]; again != pid {
		t.Errorf("after the commands the session's shell is %s, want %s", again, pid)
	}

	// A key limited by instances= runs commands where it may, and learns
	// nothing of other instances: for it the user name is no instance, so
	// the line is no gateway command: status 1 and the not-found message
	// a missing instance gets.
	if out, errOut, code := g.sshRun(t, sshBin, keyWeb, nil, host, "echo hi"); code != 0 || string(out) != "hi\n" {
		t.Errorf("web key on %s: status %d, stdout %q, stderr %q", name, code, out, errOut)
	}
	other := g.name("db-cmd")
	if _, errOut, code := g.sshRun(t, sshBin, keyWeb, nil, other+"@127.0.0.1", "echo hi"); code != 1 || !strings.Contains(string(errOut), `instance "`+other+`" not found or not running`) || strings.Contains(string(errOut), "usage:") {
		t.Errorf("web key on %s: status %d, stderr %q; want 1 and the not-found message alone", other, code, errOut)
	}
}
