package matrix

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// engine is one backend as the matrix drives it: what the gateway is
// started with, how an instance is made, and how the test looks inside it.
type engine interface {
	// name is the column's backend: docker, kubernetes or local.
	name() string
	// gatewayArgs and gatewayEnv start a gateway for this run's instances,
	// reaching the engine through p (nil for local).
	gatewayArgs() []string
	gatewayEnv(p *proxy) []string
	// proxy starts the proxy the gateway reaches the engine through (nil
	// when there is no engine).
	proxy(t *testing.T) *proxy
	// instance starts an instance for one cell and returns its name.
	instance(t *testing.T, cell string) string
	// run runs a shell script in the instance and returns its output.
	run(t *testing.T, inst, script string) (string, error)
	// listen starts a one-connection TCP service in the instance running
	// script on the connection (nc -e), and returns the host:port a
	// forward inside the instance reaches it at.
	listen(t *testing.T, inst string, port int, script string) string
	// left returns the processes left in the instance that are not its
	// own (PID 1 and ps), or, on the local backend, those of pids still
	// alive.
	left(t *testing.T, inst string, pids []int) []string
}

// waitFor bounds every wait for the gateway, an engine or a client.
const waitFor = 30 * time.Second

func command(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func commandT(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out, err := command(ctx, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// psLeft parses `ps -o pid,stat,args` from inside an instance: every
// process but PID 1, the ps itself and zombies (the test instances' PID 1
// is a sleep, which reaps no orphan: a zombie is an ended process whose
// entry only PID 1 could clear).
func psLeft(out string) []string {
	var left []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "1" || f[2] == "ps" || strings.HasPrefix(f[1], "Z") {
			continue
		}
		left = append(left, strings.Join(f, " "))
	}
	return left
}

// ---- Docker

type dockerEngine struct {
	run0  string // this run's id
	label string // KEY=VALUE every container of the run carries
}

func (d *dockerEngine) name() string { return "docker" }

func (d *dockerEngine) gatewayArgs() []string {
	return []string{"--backend", "docker", "--instance-label", d.label}
}

func (d *dockerEngine) gatewayEnv(p *proxy) []string {
	return []string{"DOCKER_HOST=unix://" + p.ln.Addr().String()}
}

func (d *dockerEngine) proxy(t *testing.T) *proxy {
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		sock = strings.TrimPrefix(h, "unix://")
	}
	return startProxy(t, "unix", filepath.Join(t.TempDir(), "docker.sock"), func() (net.Conn, error) {
		return net.Dial("unix", sock)
	})
}

func (d *dockerEngine) instance(t *testing.T, cell string) string {
	t.Helper()
	name := "tgm-" + d.run0 + "-" + cell
	commandT(t, "docker", "run", "-d", "--rm", "--name", name, "--network", "none", "--label", d.label,
		"termgate-test:busybox", "sleep", "100000")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, _ = command(ctx, "docker", "rm", "-f", name)
	})
	return name
}

func (d *dockerEngine) run(t *testing.T, inst, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return command(ctx, "docker", "exec", inst, "sh", "-c", script)
}

func (d *dockerEngine) listen(t *testing.T, inst string, port int, script string) string {
	t.Helper()
	commandT(t, "docker", "exec", "-d", inst, "nc", "-l", "-p", strconv.Itoa(port), "-e", "sh", "-c", script)
	waitListening(t, d, inst, port)
	return "127.0.0.1:" + strconv.Itoa(port)
}

func (d *dockerEngine) left(t *testing.T, inst string, _ []int) []string {
	t.Helper()
	return psLeft(commandT(t, "docker", "exec", inst, "ps", "-o", "pid,stat,args"))
}

// waitListening waits until port listens in the instance (netstat: a
// connection would use up the one nc serves).
func waitListening(t *testing.T, e engine, inst string, port int) {
	t.Helper()
	want := regexp.MustCompile(fmt.Sprintf(`:%d\s.*LISTEN`, port))
	deadline := time.Now().Add(waitFor)
	for {
		out, err := e.run(t, inst, "netstat -ltn")
		if err == nil && want.MatchString(out) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on port %d in %s: %v\n%s", port, inst, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ---- Kubernetes

type kubeEngine struct {
	run0, ns, label string
	kubeconfig      string        // the cluster's
	server          string        // host:port of its API server
	ready           chan struct{} // closed once setup has run (made: the namespace is there)
	made            bool          // written before ready is closed
}

func (k *kubeEngine) name() string { return "kubernetes" }

func (k *kubeEngine) gatewayArgs() []string {
	return []string{"--backend", "kubernetes", "--kube-namespace", k.ns, "--instance-label", k.label}
}

// gatewayEnv: the gateway gets a copy of the kubeconfig whose server is
// the proxy (TLS passes through it; the API server's certificate names
// 127.0.0.1, whatever the port).
func (k *kubeEngine) gatewayEnv(p *proxy) []string {
	return []string{"KUBECONFIG=" + k.proxied(p)}
}

func (k *kubeEngine) proxied(p *proxy) string {
	b, err := os.ReadFile(k.kubeconfig)
	if err != nil {
		panic(err)
	}
	re := regexp.MustCompile(`(?m)^(\s*server:\s*https://)[^\s/]+`)
	out := re.ReplaceAllString(string(b), "${1}"+p.ln.Addr().String())
	f := filepath.Join(os.TempDir(), "tgmatrix-"+k.run0+"-"+strings.ReplaceAll(p.ln.Addr().String(), ":", "-")+".kubeconfig")
	if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
		panic(err)
	}
	return f
}

func (k *kubeEngine) proxy(t *testing.T) *proxy {
	return startProxy(t, "tcp", "127.0.0.1:0", func() (net.Conn, error) {
		return net.DialTimeout("tcp", k.server, 5*time.Second)
	})
}

func (k *kubeEngine) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return commandT(t, "kubectl", append([]string{"--kubeconfig", k.kubeconfig, "-n", k.ns}, args...)...)
}

func (k *kubeEngine) instance(t *testing.T, cell string) string {
	t.Helper()
	name := "tgm-" + k.run0 + "-" + strings.ToLower(cell)
	key, val, _ := strings.Cut(k.label, "=")
	overrides := fmt.Sprintf(`{"spec":{"terminationGracePeriodSeconds":0,"automountServiceAccountToken":false,`+
		`"containers":[{"name":"shell","image":"localhost/busybox:1","imagePullPolicy":"Never","command":["sleep","100000"]}]},`+
		`"metadata":{"labels":{%q:%q}}}`, key, val)
	k.kubectl(t, "run", name, "--image", "localhost/busybox:1", "--restart", "Never", "--overrides", overrides)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, _ = command(ctx, "kubectl", "--kubeconfig", k.kubeconfig, "-n", k.ns, "delete", "pod", name, "--grace-period=0", "--force", "--wait=false")
	})
	k.kubectl(t, "wait", "--for=condition=Ready", "--timeout=60s", "pod/"+name)
	return name
}

func (k *kubeEngine) run(t *testing.T, inst, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return command(ctx, "kubectl", "--kubeconfig", k.kubeconfig, "-n", k.ns, "exec", inst, "--", "sh", "-c", script)
}

func (k *kubeEngine) listen(t *testing.T, inst string, port int, script string) string {
	t.Helper()
	if _, err := k.run(t, inst, fmt.Sprintf("nc -l -p %d -e sh -c %s >/dev/null 2>&1 </dev/null &", port, shellQuote(script))); err != nil {
		t.Fatal(err)
	}
	waitListening(t, k, inst, port)
	return "127.0.0.1:" + strconv.Itoa(port)
}

func (k *kubeEngine) left(t *testing.T, inst string, _ []int) []string {
	t.Helper()
	return psLeft(k.kubectl(t, "exec", inst, "--", "ps", "-o", "pid,stat,args"))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ---- local

// localEngine's instances are shells on this host: any name is one.
type localEngine struct{ run0 string }

func (l *localEngine) name() string               { return "local" }
func (l *localEngine) gatewayArgs() []string      { return []string{"--backend", "local"} }
func (l *localEngine) gatewayEnv(*proxy) []string { return nil }
func (l *localEngine) proxy(*testing.T) *proxy    { return nil }
func (l *localEngine) instance(_ *testing.T, cell string) string {
	return "tgm-" + l.run0 + "-" + strings.ToLower(cell)
}

func (l *localEngine) run(t *testing.T, _, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return command(ctx, "sh", "-c", script)
}

// listen serves one connection on a port of this host: the local
// backend's forwards dial from the gateway's host.
func (l *localEngine) listen(t *testing.T, _ string, _ int, script string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		_ = ln.Close()
		if err != nil {
			return
		}
		// The script gets the socket itself, as nc -e gives it: the
		// connection closes when the script exits, not when a copy ends.
		f, err := c.(*net.TCPConn).File()
		_ = c.Close()
		if err != nil {
			return
		}
		defer f.Close()
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdin, cmd.Stdout = f, f
		_ = cmd.Run()
	}()
	return ln.Addr().String()
}

// left: the local shells are this host's processes; those of pids that
// still exist and are not zombies are left.
func (l *localEngine) left(_ *testing.T, _ string, pids []int) []string {
	var left []string
	for _, pid := range pids {
		if syscall.Kill(pid, 0) != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			continue
		}
		left = append(left, fmt.Sprintf("pid %d: %s", pid, stat))
	}
	return left
}
