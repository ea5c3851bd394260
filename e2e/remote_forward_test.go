package e2e

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRemoteForward: ssh -R through the real gateway, the Docker backend
// and OpenSSH. The listener is inside the container's network namespace;
// each connection made to it reaches a listener in this test through the
// client. Port 0 reports the port the container chose, as OpenSSH
// prints it; a client in the container (busybox nc) reaches the test;
// each side's end reaches the other (through -L into the container, a
// real client there whose half-close the test controls); a unix socket
// listener in the container works, and -L to that socket (direct-
// streamlocal) reaches it; nothing is left in the container once the
// clients are gone.
func TestRemoteForward(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	needHolder(t)
	g := newGateway(t, options{containers: []string{"web-rfwd"}})
	name := g.name("web-rfwd")
	host := name + "@127.0.0.1"
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitFor)
	defer cancel()
	wcPort, wcHeard := testListener(t, "wc")
	helloPort, helloHeard := testListener(t, "hello")

	t.Run("port 0 is reported, a client in the container reaches the test", func(t *testing.T) {
		cmd := sshVerbose(g, t, ctx, sshBin, keyAdmin, "-N", "-o", "ExitOnForwardFailure=yes", "-R", "0:127.0.0.1:"+wcPort, host)
		lines := startStderr(t, cmd)
		port := allocatedPort(t, lines)
		out := dockerExec(t, name, "echo ping | nc 127.0.0.1 "+port)
		if strings.TrimSpace(out) != "5" {
			t.Fatalf("nc in the container through -R: %q, want the test's answer 5", out)
		}
		if got := <-wcHeard; got != "ping\n" {
			t.Fatalf("the test's listener heard %q", got)
		}
	})

	rport := freeContainerPort(t, name)
	cmd := g.sshCommand(t, ctx, sshBin, keyAdmin, "-N", "-o", "ExitOnForwardFailure=yes",
		"-R", "127.0.0.1:"+rport+":127.0.0.1:"+helloPort,
		"-R", "/tmp/rfwd.sock:127.0.0.1:"+wcPort, host)
	startPiped(t, cmd)
	eventually(t, "the fixed port and the socket listen in the container", func() bool {
		out := dockerExec(t, name, "netstat -ltnx")
		return strings.Contains(out, "127.0.0.1:"+rport+" ") && strings.Contains(out, "/tmp/rfwd.sock")
	})

	t.Run("fixed port, the test's side ends first, the container's goes on", func(t *testing.T) {
		// The container's client is the helper's dial through -L (not
		// -W: OpenSSH's -W ends its own side at the target's EOF).
		lport := freePort(t)
		l := g.sshCommand(t, ctx, sshBin, keyAdmin, "-N", "-o", "ExitOnForwardFailure=yes", "-L", lport+":127.0.0.1:"+rport, host)
		startPiped(t, l)
		conn := dialLocal(t, lport)
		defer conn.Close()
		r := bufio.NewReader(conn)
		if l, err := r.ReadString('\n'); err != nil || l != "hello\n" {
			t.Fatalf("read %q, %v; want the test's hello", l, err)
		}
		if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
			t.Fatalf("after hello: %q, %v; want the test's EOF", rest, err)
		}
		if _, err := io.WriteString(conn, "after the end\n"); err != nil {
			t.Fatal(err)
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		if got := <-helloHeard; got != "after the end\n" {
			t.Fatalf("the test's listener heard %q after its own end", got)
		}
	})

	t.Run("unix socket listener, reached with -L to the socket", func(t *testing.T) {
		lport := freePort(t)
		l := g.sshCommand(t, ctx, sshBin, keyAdmin, "-N", "-o", "ExitOnForwardFailure=yes", "-L", lport+":/tmp/rfwd.sock", host)
		startPiped(t, l)
		conn := dialLocal(t, lport)
		defer conn.Close()
		if _, err := io.WriteString(conn, "via the socket\n"); err != nil {
			t.Fatal(err)
		}
		_ = conn.(*net.TCPConn).CloseWrite() // the client's end first: wc answers after it
		if got, err := io.ReadAll(conn); err != nil || strings.TrimSpace(string(got)) != "15" {
			t.Fatalf("through -L to the socket and -R from it: %q, %v; want 15", got, err)
		}
		if got := <-wcHeard; got != "via the socket\n" {
			t.Fatalf("the test's listener heard %q", got)
		}
		mode := dockerExec(t, name, "stat -c %a /tmp/rfwd.sock")
		if strings.TrimSpace(mode) != "600" {
			t.Errorf("the socket's mode is %q, want 600", mode)
		}
	})

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	eventually(t, "the listeners and the helper are gone with the client", func() bool {
		ps := dockerExec(t, name, "ps -o args")
		ls := dockerExec(t, name, "ls /tmp; netstat -ltnx")
		return !strings.Contains(ps, " listen ") && !strings.Contains(ps, " fetch ") && !strings.Contains(ps, " dial ") &&
			!strings.Contains(ls, "rfwd.sock") && !strings.Contains(ls, ":"+rport+" ")
	})
	eventually(t, "the forwards are audited", func() bool {
		b, _ := os.ReadFile(filepath.Join(g.stateDir, "audit.log"))
		logs := string(b)
		return strings.Contains(logs, `"result":"listening"`) && strings.Contains(logs, `"listen":"unix:/tmp/rfwd.sock"`) &&
			strings.Contains(logs, `"result":"closed"`) && strings.Contains(logs, `"bytes_to_target"`)
	})
}

// testListener listens on the test's loopback: "wc" reads to the
// client's EOF and answers the byte count; "hello" answers "hello", ends
// its side, then reads to the client's EOF. What each connection sent is
// sent on the channel. It returns the port.
func testListener(t *testing.T, mode string) (string, <-chan string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan string, 8)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(waitFor))
				if mode == "hello" {
					_, _ = io.WriteString(c, "hello\n")
					_ = c.(*net.TCPConn).CloseWrite()
				}
				b, _ := io.ReadAll(c)
				if mode == "wc" {
					_, _ = io.WriteString(c, strconv.Itoa(len(b))+"\n")
				}
				heard <- string(b)
			})
		}
	})
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), heard
}

// sshVerbose is sshCommand at LogLevel INFO, where OpenSSH prints the
// port allocated for -R 0.
func sshVerbose(g *gateway, t *testing.T, ctx context.Context, sshBin, key string, args ...string) *exec.Cmd {
	_, port, _ := net.SplitHostPort(g.sshAddr)
	base := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=INFO", "-i", g.keyFiles[key], "-p", port}
	cmd := exec.CommandContext(ctx, sshBin, append(base, args...)...)
	cmd.Env = sshEnv(t.TempDir())
	return cmd
}

// startStderr starts cmd and returns its stderr's lines; the cleanup
// ends it.
func startStderr(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); <-done })
	return lines
}

var allocatedRe = regexp.MustCompile(`Allocated port (\d+) for remote forward`)

// allocatedPort waits for OpenSSH's "Allocated port N" line.
func allocatedPort(t *testing.T, lines <-chan string) string {
	t.Helper()
	timeout := time.After(waitFor)
	var seen []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("ssh ended without reporting the port: %q", seen)
			}
			seen = append(seen, l)
			if m := allocatedRe.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatalf("no allocated port within %v: %q", waitFor, seen)
		}
	}
}

// freeContainerPort is a port nothing listens on in the container.
func freeContainerPort(t *testing.T, name string) string {
	t.Helper()
	out := dockerExec(t, name, "netstat -ltn")
	for p := 20000; p < 20100; p++ {
		if !strings.Contains(out, ":"+strconv.Itoa(p)+" ") {
			return strconv.Itoa(p)
		}
	}
	t.Fatal("no free port in the container")
	return ""
}
