package e2e

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Issue 40 item 1: while the engine is unreachable, SSH users read the
// cause and what to do, and a gateway command addressed to the local login
// (ssh HOST instances as root) stays the gateway's command, never "a
// command in root". The gateway talks to the engine through a proxy
// socket of the test's own, which the test cuts: the shared engine is not
// touched.
func TestOpenSSHEngineUnreachable(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	needDocker(t)
	px := newEngineProxy(t)
	g := newGateway(t, options{env: []string{"DOCKER_HOST=unix://" + px.path}})
	home := t.TempDir()
	px.cut()

	name := g.name("web-down") // never looked up: no cached answer
	run := func(args ...string) (int, string) {
		t.Helper()
		r := g.openssh(t, sshBin, home, args...)
		_ = r.stdin.Close()
		code := r.wait()
		return code, r.out.String() + r.errOut.String()
	}
	const cause = "the gateway cannot reach its backend"
	for _, c := range []struct {
		what string
		argv []string
		want string
	}{
		{"attach", []string{"-tt", name + "@127.0.0.1"}, "attach to " + name + " failed: " + cause},
		{"a command in an instance", []string{name + "@127.0.0.1", "uptime"}, "run a command in " + name + " failed: " + cause},
		{"instances as the local login", []string{"root@127.0.0.1", "instances"}, "could not list the instances: " + cause},
		{"instances as termgate", []string{"termgate@127.0.0.1", "instances"}, "could not list the instances: " + cause},
	} {
		code, out := run(c.argv...)
		if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "try again") {
			t.Errorf("%s (ssh %v) with the engine down: status %d, output %q; want 1 and %q with what to do", c.what, c.argv, code, out, c.want)
		}
		if strings.Contains(out, "run a command in root") {
			t.Errorf("%s: a gateway command became a command in the instance root: %q", c.what, out)
		}
	}
	// A gateway command that needs no engine still answers.
	if code, out := run("root@127.0.0.1", "list"); code != 0 || !strings.Contains(out, "no sessions") {
		t.Errorf("ssh root@HOST list with the engine down: status %d, output %q; want 0 and the gateway's list", code, out)
	}
	if log := g.logs.String(); strings.Contains(log, "run a command in failed") {
		t.Errorf("the log still reads \"run a command in failed\" (no instance in the message):\n%s", log)
	}
}

// engineProxy relays a unix socket of the test's to the Docker engine's,
// until cut.
type engineProxy struct {
	path  string
	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex // guards conns and done
	conns []net.Conn
	done  bool
}

func newEngineProxy(t *testing.T) *engineProxy {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		if !strings.HasPrefix(h, "unix://") {
			t.Skipf("DOCKER_HOST=%s is not a unix socket; the proxy relays unix sockets only", h)
		}
		target = strings.TrimPrefix(h, "unix://")
	}
	// A short directory: a unix socket path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "tgpx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := &engineProxy{path: filepath.Join(dir, "docker.sock")}
	if p.l, err = net.Listen("unix", p.path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.cut)
	p.wg.Go(func() {
		for {
			c, err := p.l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			if !p.track(c, up) {
				return
			}
			p.wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
		}
	})
	return p
}

// track remembers c and up for cut; false (both closed) once cut.
func (p *engineProxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		_, _ = c.Close(), up.Close()
		return false
	}
	p.conns = append(p.conns, c, up)
	return true
}

// cut stops the relay as an engine that went away: the socket is gone and
// every open connection is closed. It may be called more than once.
func (p *engineProxy) cut() {
	p.mu.Lock()
	p.done = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	_ = p.l.Close() // removes the socket file
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}
