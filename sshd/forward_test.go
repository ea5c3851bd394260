package sshd

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// forwardRunner is a remote.Runner that only forwards, with the local
// backend's Dial (the gateway's own loopback).
type forwardRunner struct{ b *local.Backend }

func (r forwardRunner) Run(context.Context, sessions.Instance, remote.Command) (remote.Process, error) {
	return nil, remote.ErrUnsupported
}
func (r forwardRunner) SFTP(context.Context, sessions.Instance, remote.SFTPOptions) (remote.Conn, error) {
	return nil, remote.ErrUnsupported
}
func (r forwardRunner) Dial(ctx context.Context, inst sessions.Instance, host string, port int) (remote.Conn, error) {
	return r.b.Dial(ctx, inst, host, port)
}

// echoServer listens on loopback and echoes every connection until its
// EOF, then half-closes. It returns the port.
func echoServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
				_ = c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func newForwardFixture(t *testing.T, mutate func(*Config)) *fixture {
	t.Helper()
	return newFixture(t, func(c *Config) {
		c.Remote = forwardRunner{local.New(local.Config{})}
		c.Audit = audit.Into(c.Logger)
		if mutate != nil {
			mutate(c)
		}
	})
}

// openForward opens a direct-tcpip channel as the Go client does for
// ssh -L.
func openForward(t *testing.T, c *gossh.Client, port int) (net.Conn, error) {
	t.Helper()
	return c.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// wantRefused checks that a forward is refused with a message containing
// want.
func wantRefused(t *testing.T, c *gossh.Client, port int, reason gossh.RejectionReason, want string) {
	t.Helper()
	conn, err := openForward(t, c, port)
	if err == nil {
		conn.Close()
		t.Fatalf("forward to port %d accepted, want refused with %q", port, want)
	}
	var oe *gossh.OpenChannelError
	if !errors.As(err, &oe) || oe.Reason != reason || !strings.Contains(oe.Message, want) {
		t.Fatalf("forward refused with %v, want %v containing %q", err, reason, want)
	}
}

func TestForwardGoClient(t *testing.T) {
	port := echoServer(t)
	f := newForwardFixture(t, nil)
	c := f.dial(t, "admin", "web1")
	conn, err := openForward(t, c, port)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello through the gateway")
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("read %q, %v", got, err)
	}
	conn.Close()
	eventually(t, "the forward ends", func() bool { return f.srv.remoteRunning() == 0 })
	eventually(t, "the audit record", func() bool {
		return strings.Contains(f.logs.String(), "event=forward") && strings.Contains(f.logs.String(), "bytes_to_target=25")
	})
	if opened, refused, failed, to, from := f.srv.ForwardStats(); opened != 1 || refused != 0 || failed != 0 || to != 25 || from != 25 {
		t.Errorf("ForwardStats %d %d %d %d %d, want 1 0 0 25 25", opened, refused, failed, to, from)
	}
}

func TestForwardRefusals(t *testing.T) {
	port := echoServer(t)
	t.Run("gateway-wide off", func(t *testing.T) {
		f := newForwardFixture(t, func(c *Config) { c.Switches.NoPortForwarding = true })
		wantRefused(t, f.dial(t, "admin", "web1"), port, gossh.Prohibited, "port forwarding is turned off on this gateway")
	})
	t.Run("no runner", func(t *testing.T) {
		f := newFixture(t, nil)
		wantRefused(t, f.dial(t, "admin", "web1"), port, gossh.Prohibited, "this gateway cannot forward connections")
	})
	f := newForwardFixture(t, nil)
	t.Run("read-only", func(t *testing.T) {
		wantRefused(t, f.dial(t, "watcher", "web1"), port, gossh.Prohibited, "port forwarding refused: this key is read-only on web1")
	})
	t.Run("instances=", func(t *testing.T) {
		wantRefused(t, f.dial(t, "web", "db1"), port, gossh.Prohibited, `instance "db1" not found or not running`)
	})
	t.Run("not an instance name", func(t *testing.T) {
		wantRefused(t, f.dial(t, "admin", "Bad_Name!"), port, gossh.Prohibited, "log in as the instance")
	})
	t.Run("unknown instance", func(t *testing.T) {
		wantRefused(t, f.dial(t, "admin", "nope"), port, gossh.ConnectionFailed, `instance "nope" not found or not running`)
	})
	t.Run("connection refused", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		closed := l.Addr().(*net.TCPAddr).Port
		l.Close()
		wantRefused(t, f.dial(t, "admin", "web1"), closed, gossh.ConnectionFailed, "cannot connect to 127.0.0.1:"+strconv.Itoa(closed))
	})
	t.Run("no-port-forwarding", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": "no-port-forwarding "})
		wantRefused(t, f.dial(t, "admin", "web1"), port, gossh.Prohibited, "port forwarding is not allowed for this key")
	})
	t.Run("restrict", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": "restrict "})
		wantRefused(t, f.dial(t, "admin", "web1"), port, gossh.Prohibited, "port forwarding is not allowed for this key")
	})
	t.Run("permitopen mismatch", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": `permitopen="127.0.0.1:1",permitopen="localhost:*" `})
		c := f.dial(t, "admin", "web1")
		wantRefused(t, c, port, gossh.Prohibited, "may not connect to 127.0.0.1:"+strconv.Itoa(port))
		f.setKeys(t, map[string]string{"admin": `permitopen="127.0.0.1:1",permitopen="127.0.0.1:` + strconv.Itoa(port) + `" `})
		conn, err := openForward(t, c, port)
		if err != nil {
			t.Fatalf("permitopen= listing the target: %v", err)
		}
		conn.Close()
	})
	t.Run("a login the key may not use", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": ""})
		wantRefused(t, f.dial(t, "admin", "app@web1"), port, gossh.Prohibited, "login")
		f.setKeys(t, map[string]string{"admin": `logins="app" `})
		conn, err := openForward(t, f.dial(t, "admin", "app@web1"), port)
		if err != nil {
			t.Fatalf("forward as a login the key lists: %v", err)
		}
		conn.Close()
		f.setKeys(t, map[string]string{"admin": ""})
	})
	t.Run("malformed host", func(t *testing.T) {
		c := f.dial(t, "admin", "web1")
		for _, host := range []string{"a b", "x\x00y", strings.Repeat("a", 256), "\x1b[31m"} {
			payload := gossh.Marshal(directTCPIP{Host: host, Port: uint32(port), OrigHost: "127.0.0.1", OrigPort: 1})
			ch, reqs, err := c.OpenChannel("direct-tcpip", payload)
			if err == nil {
				go gossh.DiscardRequests(reqs)
				ch.Close()
				t.Fatalf("host %q accepted", host)
			}
			if !strings.Contains(err.Error(), "malformed direct-tcpip request") {
				t.Fatalf("host %q: %v", host, err)
			}
		}
	})
	t.Run("audited", func(t *testing.T) {
		if !strings.Contains(f.logs.String(), "forward refused") {
			t.Fatal("no log of the refusals")
		}
		if _, refused, failed, _, _ := f.srv.ForwardStats(); refused < 5 || failed < 2 {
			t.Errorf("ForwardStats refused %d failed %d, want at least 5 and 2", refused, failed)
		}
	})
}

func TestForwardRevokedIsCut(t *testing.T) {
	port := echoServer(t)
	f := newForwardFixture(t, nil)
	conn, err := openForward(t, f.dial(t, "admin", "web1"), port)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(conn, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	f.setKeys(t, map[string]string{"web": `instances="web*" `})
	f.srv.Recheck()
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, conn); done <- err }()
	select {
	case <-done:
	case <-time.After(revokeWithin):
		t.Fatal("the forward outlived its key's revocation")
	}
	eventually(t, "the forward ends", func() bool { return f.srv.remoteRunning() == 0 })
	if !strings.Contains(f.logs.String(), "forward cut: access revoked") {
		t.Fatal("no log of the cut")
	}
}

func TestForwardIdleTimeout(t *testing.T) {
	port := echoServer(t)
	f := newForwardFixture(t, func(c *Config) { c.ForwardIdleTimeout = 300 * time.Millisecond })
	conn, err := openForward(t, f.dial(t, "admin", "web1"), port)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Activity keeps it open past the timeout.
	for range 4 {
		time.Sleep(150 * time.Millisecond)
		if _, err := conn.Write([]byte("k")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, make([]byte, 1)); err != nil {
			t.Fatalf("closed while active after %v: %v", time.Since(start), err)
		}
	}
	idleFrom := time.Now()
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(idleFrom); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("closed after %v idle, want about 300ms", d)
	}
	eventually(t, "the cause is logged", func() bool { return strings.Contains(f.logs.String(), "cause=\"idle for 300ms\"") })
}

// TestForwardOpenSSH forwards with the real OpenSSH client: ssh -W and
// ssh -L are byte-exact over a few MiB, refusals print their reason
// (ssh -R: remotefwd_test.go).
func TestForwardOpenSSH(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no OpenSSH client (ssh) installed")
	}
	port := echoServer(t)
	f := newForwardFixture(t, nil)
	dir := t.TempDir()
	block, err := gossh.MarshalPrivateKey(f.privs["admin"], "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	_, gwPort, _ := net.SplitHostPort(f.addr)
	logLevel := "ERROR"
	sshCmd := func(ctx context.Context, args ...string) *exec.Cmd {
		argv := append([]string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=" + logLevel, "-i", keyFile, "-p", gwPort}, args...)
		cmd := exec.CommandContext(ctx, sshBin, argv...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		return cmd
	}
	payload := make([]byte, 4<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(payload)

	t.Run("ssh -W is byte-exact", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cmd := sshCmd(ctx, "-W", "127.0.0.1:"+strconv.Itoa(port), "web1@127.0.0.1")
		cmd.Stdin = bytes.NewReader(payload)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ssh -W: %v; stderr %q", err, stderr.String())
		}
		if got := sha256.Sum256(out); got != want {
			t.Fatalf("got %d bytes, sha256 differs (sent %d)", len(out), len(payload))
		}
		eventually(t, "the audit record", func() bool {
			return strings.Contains(f.logs.String(), "event=forward") && strings.Contains(f.logs.String(), "bytes_from_target="+strconv.Itoa(len(payload)))
		})
	})
	t.Run("ssh -L is byte-exact", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lport := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cmd := sshCmd(ctx, "-N", "-o", "ExitOnForwardFailure=yes", "-L", strconv.Itoa(lport)+":127.0.0.1:"+strconv.Itoa(port), "web1@127.0.0.1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		var conn net.Conn
		eventually(t, "ssh -L listens", func() bool {
			conn, err = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(lport))
			return err == nil
		})
		defer conn.Close()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = conn.Write(payload)
			_ = conn.(*net.TCPConn).CloseWrite()
		}()
		out, err := io.ReadAll(conn)
		wg.Wait()
		if err != nil {
			t.Fatalf("read: %v; ssh stderr %q", err, stderr.String())
		}
		if got := sha256.Sum256(out); got != want {
			t.Fatalf("got %d bytes, sha256 differs; ssh stderr %q", len(out), stderr.String())
		}
	})
	t.Run("a refusal is printed", func(t *testing.T) {
		f.setKeys(t, map[string]string{"admin": "no-port-forwarding "})
		defer f.setKeys(t, map[string]string{"admin": ""})
		logLevel = "INFO" // where OpenSSH prints why a channel was refused
		defer func() { logLevel = "ERROR" }()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cmd := sshCmd(ctx, "-W", "127.0.0.1:"+strconv.Itoa(port), "web1@127.0.0.1")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "port forwarding is not allowed for this key") {
			t.Fatalf("ssh -W with no-port-forwarding: %v, output %q", err, out)
		}
	})
}

// floodServer listens on loopback and writes to every connection until it
// is closed. It returns the port.
func floodServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestForwardStalledPeerCostsOnlyItsChannel: a client that never reads a
// forward's data holds up that channel only; another forward and a
// command on the same connection go on, and closing the stalled one frees
// its slot.
func TestForwardStalledPeerCostsOnlyItsChannel(t *testing.T) {
	flood, echo := floodServer(t), echoServer(t)
	f := newForwardFixture(t, nil)
	c := f.dial(t, "admin", "web1")
	stalled, err := openForward(t, c, flood)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the flood fill the channel's window
	conn, err := openForward(t, c, echo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("still here")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 10)
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "still here" {
		t.Fatalf("second forward beside a stalled one: %q, %v", got, err)
	}
	conn.Close()
	stalled.Close()
	eventually(t, "both forwards end", func() bool { return f.srv.remoteRunning() == 0 })
}

// TestForwardOpenSSHDynamic: ssh -D is a SOCKS5 proxy whose connections
// are direct-tcpip channels like -L's.
func TestForwardOpenSSHDynamic(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no OpenSSH client (ssh) installed")
	}
	port := echoServer(t)
	f := newForwardFixture(t, nil)
	dir := t.TempDir()
	block, _ := gossh.MarshalPrivateKey(f.privs["admin"], "")
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	_, gwPort, _ := net.SplitHostPort(f.addr)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	socksPort := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-o", "ExitOnForwardFailure=yes",
		"-i", keyFile, "-p", gwPort, "-N", "-D", "127.0.0.1:"+socksPort, "web1@127.0.0.1")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var conn net.Conn
	eventually(t, "ssh -D listens", func() bool {
		conn, err = net.Dial("tcp", "127.0.0.1:"+socksPort)
		return err == nil
	})
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	// SOCKS5: no authentication, then CONNECT 127.0.0.1:port.
	req := []byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, byte(port >> 8), byte(port)}
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 2+10)
	if _, err := io.ReadFull(conn, reply); err != nil || reply[1] != 0 || reply[3] != 0 {
		t.Fatalf("SOCKS reply %v, %v", reply, err)
	}
	if _, err := conn.Write([]byte("via socks")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 9)
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "via socks" {
		t.Fatalf("echo through ssh -D: %q, %v", got, err)
	}
}

// TestForwardCertificate: a certificate forwards only with the
// permit-port-forwarding extension, as in OpenSSH.
func TestForwardCertificate(t *testing.T) {
	port := echoServer(t)
	cf := newCertFixture(t, func(c *Config) { c.Remote = forwardRunner{local.New(local.Config{})} })
	without := cf.cert(t, nil)
	c, err := gossh.Dial("tcp", cf.addr, cf.config(without, "web1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantRefused(t, c, port, gossh.Prohibited, "certificate without permit-port-forwarding")
	with := cf.cert(t, func(c *gossh.Certificate) gossh.Signer {
		c.Extensions["permit-port-forwarding"] = ""
		return nil
	})
	c2, err := gossh.Dial("tcp", cf.addr, cf.config(with, "web1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	conn, err := openForward(t, c2, port)
	if err != nil {
		t.Fatalf("certificate with permit-port-forwarding: %v", err)
	}
	conn.Close()
}

func (r forwardRunner) DialUnix(ctx context.Context, inst sessions.Instance, path string) (remote.Conn, error) {
	return r.b.DialUnix(ctx, inst, path)
}

func (r forwardRunner) Listen(ctx context.Context, inst sessions.Instance, network, addr string) (remote.Listener, error) {
	return r.b.Listen(ctx, inst, network, addr)
}
