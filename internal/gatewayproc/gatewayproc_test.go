package gatewayproc

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
)

// bin is the gateway binary TestMain builds.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gatewayproc-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "termgate")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	err = Build(ctx, bin)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// localGateway is a Config for a local-backend gateway with one client key
// in its state directory.
func localGateway(t *testing.T) (Config, gossh.Signer) {
	t.Helper()
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil { // t.TempDir follows the umask
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "authorized_keys"), gossh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	return Config{Bin: bin, StateDir: state, Args: []string{"--backend", "local", "--local-instances", "web1"}}, signer
}

// start is Start that fails the test, with a Stop at its end.
func start(t *testing.T, c Config) *Gateway {
	t.Helper()
	g, err := Start(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if g.Running() {
			if _, err := g.Stop(15 * time.Second); err != nil {
				t.Error(err)
			}
		}
	})
	return g
}

// checkSSH runs a command over SSH, trusting only the host key the state
// directory holds: the address is the gateway's, and so is the key.
func checkSSH(t *testing.T, g *Gateway, signer gossh.Signer) {
	t.Helper()
	hostKey, err := g.HostKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := gossh.Dial("tcp", g.SSHAddr, termtest.ClientConfig("termgate", signer, hostKey, 20*time.Second))
	if err != nil {
		t.Fatalf("ssh to %s: %v", g.SSHAddr, err)
	}
	defer c.Close()
	if r := termtest.Run(t, c, "help", 20*time.Second); r.Code != 0 || !strings.Contains(r.Stdout, "usage:") {
		t.Errorf("ssh termgate@ help: %+v", r)
	}
}

// A gateway on ports the OS picked: both addresses are read from its log,
// loopback with real ports; /healthz answered before Start returned; SSH
// works with the state directory's host key; SIGTERM ends it cleanly. A
// restart on the same state keeps the host key, gets new ports, and the
// log file holds both runs.
func TestStartRestartStop(t *testing.T) {
	c, signer := localGateway(t)
	c.LogFile = filepath.Join(t.TempDir(), "termgate.log")
	g := start(t, c)
	for _, addr := range []string{g.SSHAddr, g.HTTPAddr} {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" || port == "0" || port == "" {
			t.Errorf("address %q (%v), want 127.0.0.1 with a port the OS picked", addr, err)
		}
	}
	if g.URL != "http://"+g.HTTPAddr {
		t.Errorf("URL %q for %q", g.URL, g.HTTPAddr)
	}
	checkSSH(t, g, signer)
	first, err := g.HostKey()
	if err != nil {
		t.Fatal(err)
	}
	if took, err := g.Stop(15 * time.Second); err != nil || took > 10*time.Second {
		t.Fatalf("Stop: %v after %s", err, took)
	}
	if _, err := g.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "had exited") {
		t.Errorf("a second Stop: %v, want it to say the gateway had exited", err)
	}

	g2 := start(t, c)
	if g2.SSHAddr == g.SSHAddr && g2.HTTPAddr == g.HTTPAddr {
		t.Errorf("the restart listens on the old ports %s %s", g.SSHAddr, g.HTTPAddr)
	}
	if again, err := g2.HostKey(); err != nil || !bytes.Equal(again.Marshal(), first.Marshal()) {
		t.Errorf("the restarted gateway's host key changed (%v)", err)
	}
	checkSSH(t, g2, signer)
	if strings.Contains(g2.Log.String(), g.SSHAddr) {
		t.Errorf("the second run's log holds the first run's: %q", g2.Log.String())
	}
	if _, err := g2.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(c.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(file), "termgate is listening"); n != 2 {
		t.Errorf("the log file has %d listening lines, want 2:\n%s", n, file)
	}
}

// Kill is a crash: the process is gone at once, ended by SIGKILL.
func TestKill(t *testing.T) {
	c, _ := localGateway(t)
	g := start(t, c)
	pid := g.PID()
	g.Kill()
	if g.Running() {
		t.Fatal("running after Kill")
	}
	if _, err := g.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop after Kill: %v, want it to say the gateway had been killed", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d still exists after Kill", pid)
	}
}

// A gateway that cannot start, and one whose log Start cannot read, fail
// Start with the reason and the end of the log, and leave no process.
func TestStartFails(t *testing.T) {
	c, _ := localGateway(t)
	c.Args = append(c.Args, "--no-such-flag")
	if _, err := Start(context.Background(), c); err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("Start with a bad flag: %v, want the gateway's complaint", err)
	}

	c, _ = localGateway(t)
	c.Args = append(c.Args, "--log-format", "text")
	c.StartWithin = 3 * time.Second
	if _, err := Start(context.Background(), c); err == nil || !strings.Contains(err.Error(), "termgate is listening") || !strings.Contains(err.Error(), "SSH:") {
		t.Errorf("Start with a text log: %v, want it to name the missing line and show the log", err)
	}
}

func TestParseListening(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Addrs
		err  bool
	}{
		{`{"msg":"termgate is listening","ssh":"127.0.0.1:1","http":"127.0.0.1:2"}`, Addrs{"127.0.0.1:1", "127.0.0.1:2", "http://127.0.0.1:2"}, false},
		{`{"msg":"termgate is listening","ssh":"127.0.0.1:1","https":"127.0.0.1:3"}`, Addrs{"127.0.0.1:1", "127.0.0.1:3", "https://127.0.0.1:3"}, false},
		{`{"msg":"termgate is listening","http":"127.0.0.1:2"}`, Addrs{}, true},
		{`{"msg":"termgate is listening",`, Addrs{}, true},
	} {
		got, err := parseListening([]byte(tc.line))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %+v %v, want %+v (error %v)", tc.line, got, err, tc.want, tc.err)
		}
	}
}

// The gateway's environment sets no flag from the caller's TERMGATE_*,
// keeps the holder a test names, points HOME at the state directory and
// ends with Config.Env (whose values win).
func TestEnviron(t *testing.T) {
	t.Setenv("TERMGATE_SHELL", "bash")
	t.Setenv("TERMGATE_HOLDER_BINARY", "/tmp/holder")
	t.Setenv("HOME", "/home/real")
	t.Setenv("DOCKER_HOST", "unix:///x")
	got := strings.Join(environ(Config{StateDir: "/state", Env: []string{"DOCKER_HOST=unix:///y"}}), " ")
	for _, want := range []string{"TERMGATE_HOLDER_BINARY=/tmp/holder", "DOCKER_HOST=unix:///x", "HOME=/state DOCKER_HOST=unix:///y"} {
		if !strings.Contains(got, want) {
			t.Errorf("environment %q lacks %q", got, want)
		}
	}
	for _, bad := range []string{"TERMGATE_SHELL", "/home/real"} {
		if strings.Contains(got, bad) {
			t.Errorf("environment %q holds %q", got, bad)
		}
	}
}
