package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestForwardHalfClose: through the real gateway, the Docker backend and
// OpenSSH, each side's end of a forwarded connection reaches the other
// while the other direction goes on (the stress report's D1: a target
// that answered and closed was never seen to close, so curl through
// ssh -L timed out). Services in the container, all busybox nc:
//
//	8081 answers "hello", shuts down its write side, and keeps reading
//	     into /tmp/got (the target ends first, the client goes on:
//	     through ssh -L, as OpenSSH's -W and -D end their own side
//	     when the target's end comes);
//	8082 answers "hello" and closes (an HTTP server without
//	     Content-Length, a CGI);
//	8083 wc -c: reads to EOF, then answers (the client ends first).
//
// Afterwards no forwarding helper is left in the container.
func TestForwardHalfClose(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	needHolder(t)
	g := newGateway(t, options{containers: []string{"web-halfclose"}})
	name := g.name("web-halfclose")
	host := name + "@127.0.0.1"
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitFor)
	defer cancel()
	for _, service := range []string{
		"while :; do echo hello | nc -l -p 8081 >>/tmp/got; done",
		"nc -ll -p 8082 -e echo hello",
		"nc -ll -p 8083 -e wc -c",
	} {
		if _, err := docker(ctx, "exec", "-d", name, "sh", "-c", service); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the services listen", func() bool {
		out := dockerExec(t, name, "netstat -ltn")
		return strings.Contains(out, ":8081 ") && strings.Contains(out, ":8082 ") && strings.Contains(out, ":8083 ")
	})

	t.Run("ssh -W, the target ends first", func(t *testing.T) {
		// OpenSSH's -W ends its own side once the target's end comes
		// (its stdio forward drains its input then: force_drain), so
		// ssh exits by itself, its stdin still open.
		cmd := g.sshCommand(t, ctx, sshBin, keyAdmin, "-W", "127.0.0.1:8082", host)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		out := startPiped(t, cmd)
		if got := readToEOF(t, out, cmd); got != "hello\n" {
			t.Fatalf("read %q before EOF, want hello", got)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("ssh -W after the target's end: %v", err)
		}
	})

	t.Run("ssh -L, the target ends first, the client goes on", func(t *testing.T) {
		lport := freePort(t)
		cmd := g.sshCommand(t, ctx, sshBin, keyAdmin, "-N", "-o", "ExitOnForwardFailure=yes", "-L", lport+":127.0.0.1:8081", host)
		startPiped(t, cmd)
		conn := dialLocal(t, lport)
		defer conn.Close()
		if got, err := io.ReadAll(conn); err != nil || string(got) != "hello\n" {
			t.Fatalf("through ssh -L: %q, %v; want hello and EOF", got, err)
		}
		if _, err := io.WriteString(conn, "after the target's end\n"); err != nil {
			t.Fatalf("write after the target's end: %v", err)
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		eventually(t, "the target reads what came after its end", func() bool {
			return strings.Contains(dockerExec(t, name, "cat /tmp/got"), "after the target's end")
		})
	})

	t.Run("ssh -W, the client ends first", func(t *testing.T) {
		data := make([]byte, 2<<20+1)
		_, _ = rand.Read(data)
		out, errOut, code := g.sshRun(t, sshBin, keyAdmin, data, "-W", "127.0.0.1:8083", host)
		if code != 0 || strings.TrimSpace(string(out)) != strconv.Itoa(len(data)) {
			t.Fatalf("ssh -W to wc -c: status %d, answer %q, want %d; stderr %q", code, out, len(data), errOut)
		}
	})

	t.Run("ssh -L, the target closes", func(t *testing.T) {
		lport := freePort(t)
		cmd := g.sshCommand(t, ctx, sshBin, keyAdmin, "-N", "-o", "ExitOnForwardFailure=yes", "-L", lport+":127.0.0.1:8082", host)
		startPiped(t, cmd)
		conn := dialLocal(t, lport)
		defer conn.Close()
		// The client's side stays open, as curl's does while it waits
		// for the end of a response without a length.
		if got, err := io.ReadAll(conn); err != nil || string(got) != "hello\n" {
			t.Fatalf("through ssh -L: %q, %v; want hello and EOF", got, err)
		}
	})

	t.Run("ssh -D, the target closes", func(t *testing.T) {
		lport := freePort(t)
		cmd := g.sshCommand(t, ctx, sshBin, keyAdmin, "-N", "-o", "ExitOnForwardFailure=yes", "-D", "127.0.0.1:"+lport, host)
		startPiped(t, cmd)
		conn := dialLocal(t, lport)
		defer conn.Close()
		// SOCKS5: no authentication, then CONNECT 127.0.0.1:8082.
		if _, err := conn.Write([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 8082 >> 8, 8082 & 0xff}); err != nil {
			t.Fatal(err)
		}
		reply := make([]byte, 2+10)
		if _, err := io.ReadFull(conn, reply); err != nil || reply[1] != 0 || reply[3] != 0 {
			t.Fatalf("SOCKS reply %v, %v", reply, err)
		}
		if got, err := io.ReadAll(conn); err != nil || string(got) != "hello\n" {
			t.Fatalf("through ssh -D: %q, %v; want hello and EOF", got, err)
		}
	})

	eventually(t, "no forwarding helper left in the container", func() bool {
		return !strings.Contains(dockerExec(t, name, "ps -o args"), " dial ")
	})
}

// startPiped starts cmd with its stdout piped (returned) and its stderr
// kept for the failure message; the cleanup ends it.
func startPiped(t *testing.T, cmd *exec.Cmd) io.Reader {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && errOut.Len() > 0 {
			t.Logf("ssh stderr: %s", errOut.String())
		}
	})
	return out
}

// readToEOF reads r to its EOF, which must come within waitFor; cmd is
// killed when it does not.
func readToEOF(t *testing.T, r io.Reader, cmd *exec.Cmd) string {
	t.Helper()
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	select {
	case b := <-done:
		return string(b)
	case <-time.After(waitFor):
		_ = cmd.Process.Kill()
		t.Fatalf("no EOF within %v (read %q): the other side's end was not passed on", waitFor, <-done)
		return ""
	}
}

// freePort is a local TCP port nothing listens on (for ssh -L and -D).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// dialLocal connects to the client's local port once it listens; the
// connection's deadline bounds every read and write on it.
func dialLocal(t *testing.T, port string) net.Conn {
	t.Helper()
	var conn net.Conn
	eventually(t, "ssh listens on "+port, func() bool {
		var err error
		conn, err = net.Dial("tcp", "127.0.0.1:"+port)
		return err == nil
	})
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	return conn
}
