package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// demoRun is scripts/demo.sh running the real gateway in a copy of the
// tree (demoTree), its output collected.
type demoRun struct {
	tree, home   string
	sshPort, web int
	cmd          *exec.Cmd
	out          *demoOutput
	done         chan struct{} // closed when the script has ended
	err          error         // its exit, once done is closed
}

// demoOutput is the script's output, written by the pty reader and read by
// the test.
type demoOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *demoOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *demoOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// demoTree copies the demo's scripts into a scratch tree whose slow or
// shared steps are stubs: the engine and the image are there, make builds
// nothing, docker finds web1 running with the demo's label (so no container
// is made on the shared engine), and bin/termgate is the gateway under test
// with the local backend. Its .termgate holds an authorized_keys, so no key
// is made in the scratch HOME.
func demoTree(t *testing.T) (tree, stubs, home string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tree, stubs, home = t.TempDir(), t.TempDir(), t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"demo.sh", "demo-clean.sh", "demo-gateway.sh"} {
		b, err := os.ReadFile(filepath.Join(root, "scripts", s))
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(tree, "scripts", s), string(b))
	}
	write(filepath.Join(tree, "scripts", "ensure-docker.sh"), "true\n")
	write(filepath.Join(tree, "scripts", "test-image.sh"), "true\n")
	write(filepath.Join(tree, "bin", "termgate"), "#!/bin/sh\nexec "+gatewayBin+" --backend local \"$@\"\n")
	write(filepath.Join(stubs, "make"), "#!/bin/sh\nexit 0\n")
	write(filepath.Join(stubs, "docker"), "#!/bin/sh\n[ \"$1\" = inspect ] && echo 'true 1'\nexit 0\n")
	write(filepath.Join(tree, ".termgate", "authorized_keys"), "")
	return tree, stubs, home
}

// demoFreePort is a port nothing listened on a moment ago.
func demoFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDemo runs demo.sh in its own session with a terminal (a pty), as
// in a terminal window, on free ports, and waits until the gateway
// listens. Closing the returned pty's master is closing that window. The
// cleanup stops whatever still runs.
func startDemo(t *testing.T) (*demoRun, *os.File) {
	t.Helper()
	needDocker(t) // gatewayBin is built only with the engine there
	tree, stubs, home := demoTree(t)
	d := &demoRun{tree: tree, home: home, sshPort: demoFreePort(t), web: demoFreePort(t), out: &demoOutput{}, done: make(chan struct{})}
	ptmx, tty := demoPty(t)
	d.cmd = exec.Command("bash", filepath.Join(tree, "scripts", "demo.sh"),
		"--ssh-addr", "127.0.0.1:"+strconv.Itoa(d.sshPort), "--http-addr", "127.0.0.1:"+strconv.Itoa(d.web))
	d.cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"), "HOME="+home)
	d.cmd.Stdin, d.cmd.Stdout, d.cmd.Stderr = tty, tty, tty
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var reader sync.WaitGroup
	// Reads until the master is closed (or the terminal hangs up), so that
	// the gateway's log never blocks on a full terminal.
	reader.Go(func() { _, _ = io.Copy(d.out, ptmx) })
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		ptmx.Close()
		reader.Wait()
		select {
		case <-d.done:
		default:
			// The session's processes: the script and the gateway.
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !demoListening(d.sshPort) || !demoListening(d.web) {
		select {
		case <-d.done:
			t.Fatalf("demo.sh ended before the gateway listened: %v\n%s", d.err, d.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo gateway does not listen on %d and %d after 60 s:\n%s", d.sshPort, d.web, d.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return d, ptmx
}

// demoPty opens a terminal whose master is in the runtime's poller: a
// blocking master (pty.Open's) is closed only when its reader's read
// returns, so closing it while the reader waits would never hang the
// terminal up.
func demoPty(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	m, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	// Close-on-exec, as every descriptor Go opens: a master inherited by
	// the demo would keep its terminal from hanging up.
	syscall.ForkLock.RLock()
	fd, err := syscall.Dup(int(m.Fd()))
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	m.Close()
	if err == nil {
		err = syscall.SetNonblock(fd, true)
	}
	if err != nil {
		tty.Close()
		t.Fatalf("the terminal's master: %v", err)
	}
	return os.NewFile(uintptr(fd), "ptmx"), tty
}

// demoListening: something accepts connections on 127.0.0.1:port.
func demoListening(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// gatewayPid is the pid demo.sh wrote down for its gateway.
func (d *demoRun) gatewayPid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.tree, ".termgate", "demo.pid"))
	if err != nil {
		t.Fatalf("demo.sh keeps no pid file while its gateway runs: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("demo.pid: %v", err)
	}
	return pid
}

// waitEnded waits (bounded) for demo.sh to end.
func (d *demoRun) waitEnded(t *testing.T, why string) {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("demo.sh still runs 30 s after %s:\n%s", why, d.out)
	}
}

// checkGone: the gateway process has ended (not even a zombie left to its
// parent) and its ports can be listened on again.
func (d *demoRun) checkGone(t *testing.T, pid int) {
	t.Helper()
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(b) > 0 {
		t.Errorf("the demo gateway (pid %d) still runs: %q", pid, b)
	}
	for _, p := range []int{d.sshPort, d.web} {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is still taken: %v", p, err)
			continue
		}
		l.Close()
	}
	if _, err := os.Stat(filepath.Join(d.tree, ".termgate", "demo.pid")); !os.IsNotExist(err) {
		t.Errorf("the pid file outlived the gateway: %v", err)
	}
}

// TestDemoEndsWithItsTerminal: issue 40 item 3. SIGHUP means "reload" to
// the gateway, so `make demo` whose terminal was closed kept running with
// ports 2222/8080, and the next `make demo` adopted its sessions and then
// failed with "address already in use". Now a second demo on the same
// state says that one runs and how to stop it, and closing the terminal
// (the pty's master: the kernel hangs the terminal up) ends the gateway and
// frees its ports. The gateway runs the local backend: nothing is made on
// the engine.
func TestDemoEndsWithItsTerminal(t *testing.T) {
	d, ptmx := startDemo(t)
	pid := d.gatewayPid(t)
	if !strings.Contains(d.out.String(), "listening on 127.0.0.1 only") {
		t.Errorf("the demo does not say that it listens on loopback:\n%s", d.out)
	}

	// A second demo on the same state, as from another terminal.
	second := exec.Command("bash", filepath.Join(d.tree, "scripts", "demo.sh"))
	second.Env = d.cmd.Env
	out, err := second.CombinedOutput()
	if err == nil {
		t.Errorf("a second demo.sh exited 0 while the first runs:\n%s", out)
	}
	for _, want := range []string{"a demo gateway already runs on ./.termgate (pid " + strconv.Itoa(pid) + ")", "kill " + strconv.Itoa(pid), "make demo-clean"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the second demo.sh did not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "address already in use") || strings.Contains(string(out), "building") {
		t.Errorf("the second demo.sh went on instead of stopping at once:\n%s", out)
	}
	if !demoListening(d.sshPort) {
		t.Errorf("the first demo's gateway stopped listening after the second demo.sh")
	}

	// The terminal window closes.
	ptmx.Close()
	d.waitEnded(t, "its terminal closed")
	d.checkGone(t, pid)
}

// TestDemoCleanStopsTheGateway: make demo-clean stops a running demo
// gateway (before it removes the state from under it) and removes the
// demo's host key from ~/.ssh/known_hosts, so that the next demo's new key
// does not meet "REMOTE HOST IDENTIFICATION HAS CHANGED"; lines with other
// keys stay. The HOME is a scratch one.
func TestDemoCleanStopsTheGateway(t *testing.T) {
	d, _ := startDemo(t)
	pid := d.gatewayPid(t)
	pub, err := exec.Command("ssh-keygen", "-y", "-f", filepath.Join(d.tree, ".termgate", "ssh_host_ed25519_key")).Output()
	if err != nil {
		t.Fatalf("the demo gateway's host key: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	otherPub, err := os.ReadFile(other + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	demoKey := strings.Join(strings.Fields(string(pub))[:2], " ")
	otherKey := strings.Join(strings.Fields(string(otherPub))[:2], " ")
	// What ssh wrote for the demo, hashed or not, and two lines of other
	// gateways: one on another host, one with another key on 127.0.0.1.
	known := filepath.Join(d.home, ".ssh", "known_hosts")
	if err := os.MkdirAll(filepath.Dir(known), 0o700); err != nil {
		t.Fatal(err)
	}
	lines := "[localhost]:2222 " + demoKey + "\n" +
		"[::1]:2222 " + demoKey + "\n" +
		"[gw.example]:2222 " + otherKey + "\n" +
		"[127.0.0.1]:2222 " + otherKey + "\n"
	if err := os.WriteFile(known, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-H", "-f", known).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -H: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clean := exec.CommandContext(ctx, "bash", filepath.Join(d.tree, "scripts", "demo-clean.sh"))
	clean.Env = d.cmd.Env
	out, err := clean.CombinedOutput()
	if err != nil {
		t.Fatalf("demo-clean.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"stopped the demo gateway (pid " + strconv.Itoa(pid) + ")", "removed [localhost]:2222", "removed [::1]:2222", "removed ./.termgate"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo-clean.sh did not say %q:\n%s", want, out)
		}
	}
	d.waitEnded(t, "demo-clean")
	d.checkGone(t, pid)

	for host, want := range map[string]bool{"[localhost]:2222": false, "[::1]:2222": false, "[gw.example]:2222": true, "[127.0.0.1]:2222": true} {
		err := exec.Command("ssh-keygen", "-F", host, "-f", known).Run()
		if got := err == nil; got != want {
			t.Errorf("known_hosts has a line for %s: %v, want %v", host, got, want)
		}
	}
}
