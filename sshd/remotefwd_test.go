package sshd

import (
	"bytes"
	"context"
	"encoding/pem"
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

	gossh "golang.org/x/crypto/ssh"
)

// TestRemoteForwardOpenSSH: ssh -R with the real OpenSSH client, on the
// local backend (the gateway's host is the instance): port 0 is reported
// and reached; every refusal (no-port-forwarding, permitlisten=,
// read-only, --port-forwarding=false, a unix socket beside
// permitlisten=) fails the client's forward and is audited; a
// permitlisten= that lists the port allows it.
func TestRemoteForwardOpenSSH(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no OpenSSH client (ssh) installed")
	}
	port := strconv.Itoa(echoServer(t))
	f := newForwardFixture(t, nil)
	dir := t.TempDir()
	keyFiles := map[string]string{}
	for _, name := range []string{"admin", "watcher"} {
		block, err := gossh.MarshalPrivateKey(f.privs[name], "")
		if err != nil {
			t.Fatal(err)
		}
		keyFiles[name] = filepath.Join(dir, "id_"+name)
		if err := os.WriteFile(keyFiles[name], pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, gwPort, _ := net.SplitHostPort(f.addr)
	runWith := func(t *testing.T, key string, tail []string, forward ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		argv := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=INFO", "-o", "ExitOnForwardFailure=yes",
			"-i", keyFiles[key], "-p", gwPort}
		for _, fw := range forward {
			argv = append(argv, "-R", fw)
		}
		// The command runs once the forwards are set up: it ends the
		// connection (the local backend's instance has no shell of ours:
		// it is refused, which is fine here).
		cmd := exec.CommandContext(ctx, sshBin, append(argv, tail...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	run := func(t *testing.T, key string, forward ...string) (string, error) {
		t.Helper()
		return runWith(t, key, []string{"web1@127.0.0.1", "exit"}, forward...)
	}
	refused := func(t *testing.T, key, forward, reason string) {
		t.Helper()
		// -N: ssh waits for the forwards alone; with a command, the
		// command's end could beat the refusal's reply under load.
		out, err := runWith(t, key, []string{"-N", "web1@127.0.0.1"}, forward)
		if err == nil || !strings.Contains(out, "remote port forwarding failed") {
			t.Fatalf("ssh -R %s: %v, output %q; want the forward refused", forward, err, out)
		}
		eventually(t, "the refusal is audited", func() bool {
			logs := f.logs.String()
			return strings.Contains(logs, "result=denied reason=\""+reason) || strings.Contains(logs, "result=denied reason="+reason+"\n")
		})
	}

	t.Run("port 0 is reported and reached", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cmd := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=INFO", "-o", "ExitOnForwardFailure=yes",
			"-i", keyFiles["admin"], "-p", gwPort, "-N", "-R", "0:127.0.0.1:"+port, "web1@127.0.0.1")
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		re := regexp.MustCompile(`Allocated port (\d+) for remote forward`)
		var rport string
		eventually(t, "OpenSSH reports the port", func() bool {
			m := re.FindStringSubmatch(stderr.String())
			if m != nil {
				rport = m[1]
			}
			return m != nil
		})
		conn, err := net.Dial("tcp", "127.0.0.1:"+rport)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "back through the client"); err != nil {
			t.Fatal(err)
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		if got, err := io.ReadAll(conn); err != nil || string(got) != "back through the client" {
			t.Fatalf("through -R: %q, %v", got, err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		eventually(t, "the listener closes with the connection", func() bool {
			c, err := net.Dial("tcp", "127.0.0.1:"+rport)
			if err == nil {
				c.Close()
			}
			return err != nil && f.srv.remoteRunning() == 0
		})
	})
	t.Run("no-port-forwarding", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": "no-port-forwarding "})
		refused(t, "admin", "0:127.0.0.1:"+port, "no-port-forwarding key")
	})
	t.Run("permitlisten mismatch", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": `permitlisten="1" `})
		refused(t, "admin", "0:127.0.0.1:"+port, "permitlisten")
	})
	t.Run("permitlisten beside a unix socket", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": `permitlisten="*" `})
		refused(t, "admin", filepath.Join(dir, "x.sock")+":127.0.0.1:"+port, "permitlisten")
	})
	t.Run("permitlisten listing the port", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": `permitlisten="*" `})
		if out, err := run(t, "admin", "0:127.0.0.1:"+port); strings.Contains(out, "remote port forwarding failed") {
			t.Fatalf("ssh -R with permitlisten=\"*\": %v, %q", err, out)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		f.setKeys(t, map[string]string{"watcher": "read-only "})
		refused(t, "watcher", "0:127.0.0.1:"+port, "read-only key")
	})
	t.Run("gateway-wide off", func(t *testing.T) {
		off := newForwardFixture(t, func(c *Config) { c.Switches.NoPortForwarding = true })
		_, offPort, _ := net.SplitHostPort(off.addr)
		gwPort, f = offPort, off
		block, err := gossh.MarshalPrivateKey(off.privs["admin"], "")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFiles["admin"], pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, "admin", "0:127.0.0.1:"+port, "port forwarding off")
	})
}

// TestRemoteForwardCancel: the Go client's Listen and Close send
// tcpip-forward and cancel-tcpip-forward: the listener goes with the
// cancel, the connection staying up.
func TestRemoteForwardCancel(t *testing.T) {
	f := newForwardFixture(t, nil)
	c := f.dial(t, "admin", "web1")
	l, err := c.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if _, p, _ := net.SplitHostPort(addr); p == "0" {
		t.Fatalf("the reply carried no port: %s", addr)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the listener is gone", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err != nil && f.srv.remoteRunning() == 0
	})
	if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
		t.Fatalf("the connection after the cancel: %v", err)
	}
}

// TestStreamlocalForwardRefusedByPermitOpen: -L to a unix socket is a
// forward like any, and a key limited by permitopen= reaches no socket.
func TestStreamlocalForwardRefusedByPermitOpen(t *testing.T) {
	f := newForwardFixture(t, nil)
	f.setKeys(t, map[string]string{"admin": `permitopen="127.0.0.1:1" `})
	c := f.dial(t, "admin", "web1")
	_, err := c.Dial("unix", "/tmp/whatever.sock")
	if err == nil || !strings.Contains(err.Error(), "not to unix sockets") {
		t.Fatalf("-L to a socket with permitopen=: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
