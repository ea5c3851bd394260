package e2e

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
)

// Issue 34 item 5 (stress round 4, D5): an sftp or scp transfer cut by
// a stop of its container or by the gateway's SIGTERM tells its client
// why on stderr, and the client exits non-zero of its own accord, not of
// SIGPIPE (exit 141); the gateway logs a line per transfer it cut.
func TestTransferCutSaysWhy(t *testing.T) {
	t.Parallel()
	sftpBin, err := exec.LookPath("sftp")
	if err != nil {
		needOpenSSH(t)
		t.Skipf("no sftp client: %v", err)
	}
	scpBin, _ := exec.LookPath("scp")
	needHolder(t)
	g := newGateway(t, options{containers: []string{"web-stop", "web-term"}})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, make([]byte, 30<<20))

	// docker stop: the instance goes under the transfers.
	stopped := g.name("web-stop")
	runs := []*cutTransfer{g.slowSFTP(t, sftpBin, stopped, big, "/tmp/s1")}
	if scpBin != "" {
		runs = append(runs, g.slowSCP(t, scpBin, stopped, big, "/tmp/s2"))
	}
	for _, r := range runs {
		r.waitGrowing(t, stopped)
	}
	// A command running there is told too, rather than ending with a
	// bare 137.
	cmdCtx, cmdCancel := context.WithTimeout(context.Background(), waitFor)
	defer cmdCancel()
	command := g.sshCommand(t, cmdCtx, needOpenSSH(t), keyAdmin, stopped+"@127.0.0.1", "echo started; sleep 100")
	cmdOut, cmdErr := termtest.NewStream(), &termtest.SyncBuffer{}
	command.Stdout, command.Stderr = cmdOut, cmdErr
	if err := command.Start(); err != nil {
		t.Fatal(err)
	}
	if m, _ := cmdOut.WaitFor(regexp.MustCompile(`started`), 0, waitFor); m == nil {
		t.Fatalf("the command never started; stderr %q", cmdErr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := docker(ctx, "stop", "-t", "1", stopped); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		r.check(t, `\[termgate\] instance stopped; transfer ended`, true)
	}
	waitLog(t, g.logs, `transfer ended: instance stopped.*"instance":"`+regexp.QuoteMeta(stopped), len(runs))
	if err := command.Wait(); err == nil {
		t.Errorf("the command in the stopped instance exited 0")
	}
	if !strings.Contains(cmdErr.String(), "[termgate] instance stopped; command ended") {
		t.Errorf("the command's client was not told its instance stopped; stderr %q", cmdErr.String())
	}

	// SIGTERM: the gateway goes.
	term := g.name("web-term")
	runs = []*cutTransfer{g.slowSFTP(t, sftpBin, term, big, "/tmp/t1")}
	if scpBin != "" {
		runs = append(runs, g.slowSCP(t, scpBin, term, big, "/tmp/t2"))
	}
	for _, r := range runs {
		r.waitGrowing(t, term)
	}
	took := g.stop(t)
	t.Logf("the gateway exited %s after SIGTERM", took)
	for _, r := range runs {
		// The shutdown closes the connections only once every cut
		// transfer has told its client (sshd Server.Drained): sftp gets
		// its failure replies and exits 1, as scp does.
		r.check(t, `\[termgate\] gateway is shutting down; transfer ended`, true)
	}
	waitLog(t, g.logs, `transfer ended: gateway is shutting down.*"instance":"`+regexp.QuoteMeta(term), len(runs))
}

// cutTransfer is a running sftp or scp upload, slowed down so that it is
// cut in its middle.
type cutTransfer struct {
	what   string
	remote string // where it writes in the instance
	cmd    *exec.Cmd
	out    *termtest.SyncBuffer
	done   chan struct{}
	err    error
}

// slowSFTP uploads local to instance:remote with sftp -b at 2 Mbit/s.
func (g *gateway) slowSFTP(t *testing.T, sftpBin, instance, local, remote string) *cutTransfer {
	t.Helper()
	_, port, _ := net.SplitHostPort(g.sshAddr)
	// -R 1: sftp reads each reply before its next request. With its
	// default 64 in flight, a slowed sftp reads the gateway's failure
	// only after the replies already on their way (64 x 32 KiB at the
	// rate), and the gateway does not wait that long.
	r := g.startCut(t, "sftp", remote, sftpBin, "-b", "-", "-R", "1", "-l", "2000", "-P", port, instance+"@127.0.0.1")
	r.cmd.Stdin = strings.NewReader("put " + local + " " + remote + "\n")
	r.start(t)
	return r
}

// slowSCP uploads local to instance:remote with scp (SFTP mode) at 2
// Mbit/s.
func (g *gateway) slowSCP(t *testing.T, scpBin, instance, local, remote string) *cutTransfer {
	t.Helper()
	_, port, _ := net.SplitHostPort(g.sshAddr)
	r := g.startCut(t, "scp", remote, scpBin, "-l", "2000", "-P", port, local, instance+"@127.0.0.1:"+remote)
	r.start(t)
	return r
}

func (g *gateway) startCut(t *testing.T, what, remote, bin string, args ...string) *cutTransfer {
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	base := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", g.keyFiles[keyAdmin]}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Env = sshEnv(t.TempDir())
	r := &cutTransfer{what: what, remote: remote, cmd: cmd, out: &termtest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	go func() {
		<-r.done
		cancel()
	}()
	return r
}

func (r *cutTransfer) start(t *testing.T) {
	t.Helper()
	if err := r.cmd.Start(); err != nil {
		close(r.done)
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
}

// check waits for the client's exit (bounded by its context) and checks
// it printed notice and (ownExit) exited non-zero by itself, not of a
// signal.
func (r *cutTransfer) check(t *testing.T, notice string, ownExit bool) {
	t.Helper()
	<-r.done
	var ee *exec.ExitError
	switch {
	case !ownExit:
	case r.err == nil:
		t.Errorf("%s exited 0 although its transfer was cut; output %q", r.what, r.out)
	case !errors.As(r.err, &ee):
		t.Errorf("%s: %v", r.what, r.err)
	case ee.Sys().(syscall.WaitStatus).Signaled():
		t.Errorf("%s died of %v (SIGPIPE: 141), want an exit of its own; output %q", r.what, ee.Sys().(syscall.WaitStatus).Signal(), r.out)
	}
	if !regexp.MustCompile(notice).MatchString(r.out.String()) {
		t.Errorf("%s printed %q, want the gateway's reason %q", r.what, r.out, notice)
	}
	t.Logf("%s: %v, output %q", r.what, r.err, r.out)
}

// waitGrowing waits until the upload's file in the container has some
// bytes.
func (r *cutTransfer) waitGrowing(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		n, err := strconv.Atoi(strings.TrimSpace(dockerExec(t, name, "wc -c < "+r.remote+" 2>/dev/null || echo 0")))
		if err == nil && n > 0 {
			return
		}
		select {
		case <-r.done:
			t.Fatalf("%s ended before its upload started: %v, output %q", r.what, r.err, r.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no byte in %s within %s; output %q", r.what, r.remote, waitFor, r.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLog waits until the gateway's log holds n lines matching re.
func waitLog(t *testing.T, logs *termtest.Stream, re string, n int) {
	t.Helper()
	pat := regexp.MustCompile(re)
	deadline := time.Now().Add(waitFor)
	for len(pat.FindAllString(logs.String(), -1)) < n {
		if time.Now().After(deadline) {
			t.Errorf("the gateway log has %d lines matching %q, want %d:\n%s", len(pat.FindAllString(logs.String(), -1)), re, n, logs.String())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
