package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

const (
	// waitFor bounds every wait for something the gateway or a container
	// should do.
	waitFor = 20 * time.Second
	// stopWithin is the contract's bound on a SIGTERM shutdown.
	stopWithin = 10 * time.Second
)

// Credentials every gateway is started with. keyAdmin and tokAdmin may use
// every instance; keyWeb and tokWeb only "<prefix>web-*"; keyStranger is
// not in authorized_keys.
const (
	keyAdmin    = "admin"
	keyWeb      = "web"
	keyStranger = "stranger"
	// keyLogins may use every instance as the logins app (its default),
	// bob and uid 1234 (CONTRACT "Named sessions and logins").
	keyLogins = "logins"
	tokAdmin  = "admin"
	tokWeb    = "web"
	// tokLogins may use every instance as the login app only.
	tokLogins = "logins"
)

// options configure a gateway fixture.
type options struct {
	// idleTimeout is --idle-timeout (default 10m: no reaping during a test).
	idleTimeout time.Duration
	// containers are started (in parallel) before the gateway, named
	// prefix+suffix.
	containers []string
	// args are extra gateway flags (e.g. "--replay", "raw").
	args []string
	// env is added to the gateway's environment (e.g. DOCKER_HOST).
	env []string
}

// gateway is a running termgate process with its state directory,
// credentials and containers. Its cleanup stops it with SIGTERM, checks that
// it exits in time and leaves no marked process in a running container,
// and removes the containers.
type gateway struct {
	t         *testing.T
	stateDir  string // --state-dir: authorized_keys, api_token, host key
	prefix    string // every container name starts with it: "tge2e-<id>-"
	label     string // --instance-label, carried by every container
	sshAddr   string // 127.0.0.1:PORT
	httpAddr  string // 127.0.0.1:PORT
	baseURL   string // http://127.0.0.1:PORT
	hostKey   gossh.PublicKey
	signers   map[string]gossh.Signer
	keyFiles  map[string]string // OpenSSH private key files, by key name
	tokens    map[string]string // by token name
	http      *http.Client
	logs      *termtest.Stream // the current run's stdout and stderr
	extraArgs []string         // options.args
	extraEnv  []string         // options.env

	proc *gatewayproc.Gateway // the current run

	mu         sync.Mutex // guards containers and stopped
	containers []string
	stopped    bool
}

// newGateway starts containers and a gateway for them.
func newGateway(t *testing.T, o options) *gateway {
	t.Helper()
	needDocker(t)
	if o.idleTimeout == 0 {
		o.idleTimeout = 10 * time.Minute
	}
	id := randomHex(t, 4)
	g := &gateway{
		t:        t,
		prefix:   "tge2e-" + id + "-",
		label:    "tge2e.gw=" + id,
		signers:  map[string]gossh.Signer{},
		keyFiles: map[string]string{},
		tokens:   map[string]string{},
		// No keep-alive: no idle connection (and goroutine) outlives a request.
		http: &http.Client{Timeout: waitFor, Transport: &http.Transport{DisableKeepAlives: true}},
		logs: termtest.NewStream(),
	}
	t.Cleanup(g.cleanup)

	g.writeState(t)
	var wg sync.WaitGroup
	errs := make([]error, len(o.containers))
	for i, suffix := range o.containers {
		wg.Go(func() { errs[i] = g.startContainer(suffix) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	g.extraArgs, g.extraEnv = o.args, o.env
	g.start(t, o.idleTimeout)
	return g
}

// name is the full name of the container with this suffix.
func (g *gateway) name(suffix string) string { return g.prefix + suffix }

// startContainer starts a container for the gateway; its cleanup removes it.
func (g *gateway) startContainer(suffix string) error {
	name := g.name(suffix)
	g.mu.Lock()
	g.containers = append(g.containers, name)
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err := docker(ctx, "run", "-d", "--init", "--network", "none",
		"--label", "tge2e", "--label", g.label, "--name", name, testImage)
	return err
}

// writeState writes the keys, authorized_keys and token file the gateway
// starts with.
func (g *gateway) writeState(t *testing.T) {
	t.Helper()
	g.stateDir = t.TempDir()
	// t.TempDir follows the umask (0775 under umask 002); the gateway
	// refuses a state directory its group may write.
	if err := os.Chmod(g.stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	keyDir := t.TempDir()
	web := g.prefix + "web-*"
	var ak strings.Builder
	for _, name := range []string{keyAdmin, keyWeb, keyStranger, keyLogins} {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		signer, err := gossh.NewSignerFromKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		g.signers[name] = signer
		block, err := gossh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		g.keyFiles[name] = filepath.Join(keyDir, "id_"+name)
		writeFile(t, g.keyFiles[name], pem.EncodeToMemory(block))
		pub := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(signer.PublicKey())))
		switch name {
		case keyAdmin:
			fmt.Fprintf(&ak, "%s %s\n", pub, name)
		case keyWeb:
			fmt.Fprintf(&ak, "instances=%q %s %s\n", web, pub, name)
		case keyLogins:
			fmt.Fprintf(&ak, "logins=\"app,bob,1234\" %s %s\n", pub, name)
		}
	}
	writeFile(t, filepath.Join(g.stateDir, "authorized_keys"), []byte(ak.String()))
	g.tokens[tokAdmin] = randomHex(t, 24)
	g.tokens[tokWeb] = randomHex(t, 24)
	g.tokens[tokLogins] = randomHex(t, 24)
	writeFile(t, filepath.Join(g.stateDir, "api_token"), fmt.Appendf(nil,
		"%s admin\n%s limited instances=%s\n%s apps logins=app\n", g.tokens[tokAdmin], g.tokens[tokWeb], web, g.tokens[tokLogins]))
}

// start runs the gateway on ports the OS picks and waits until /healthz
// answers.
func (g *gateway) start(t *testing.T, idle time.Duration) {
	t.Helper()
	proc, err := gatewayproc.Start(context.Background(), gatewayproc.Config{
		Bin:      gatewayBin,
		StateDir: g.stateDir,
		Args: append([]string{
			"--backend", "docker",
			"--instance-label", g.label,
			"--idle-timeout", idle.String(),
			"--buffer-size", "64KiB",
			"--log-level", "debug",
		}, g.extraArgs...),
		Env: g.extraEnv,
	})
	if err != nil {
		t.Fatal(err)
	}
	g.proc, g.logs = proc, proc.Log
	g.sshAddr, g.httpAddr, g.baseURL = proc.SSHAddr, proc.HTTPAddr, proc.URL
	if g.hostKey, err = proc.HostKey(); err != nil {
		t.Fatal(err)
	}
}

// stop sends SIGTERM and waits for the process to exit; the contract gives
// it stopWithin. It reports a late or unclean exit on t and returns how
// long the exit took. Only the first call does anything.
func (g *gateway) stop(t *testing.T) time.Duration {
	t.Helper()
	g.mu.Lock()
	stopped := g.stopped
	g.stopped = true
	g.mu.Unlock()
	if stopped || g.proc == nil {
		return 0
	}
	took, err := g.proc.Stop(stopWithin)
	if err != nil {
		t.Error(err)
	}
	return took
}

// cleanup stops the gateway, checks every running container for marked
// processes it left behind and removes the containers.
func (g *gateway) cleanup() {
	t := g.t
	if took := g.stop(t); took > 2*time.Second {
		t.Logf("the gateway took %s to exit after SIGTERM", took.Round(time.Millisecond))
	}
	g.mu.Lock()
	names := append([]string(nil), g.containers...)
	g.mu.Unlock()
	for _, name := range names {
		if !running(t, name) {
			continue
		}
		if left := markedProcesses(t, name); len(left) > 0 {
			t.Errorf("after the gateway exited, %s still runs marked processes:\n%s", name, strings.Join(left, "\n"))
		}
	}
	if len(names) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if _, err := docker(ctx, append([]string{"rm", "-f"}, names...)...); err != nil {
			t.Errorf("remove containers: %v", err)
		}
	}
	if t.Failed() || os.Getenv("TERMGATE_E2E_LOGS") == "1" {
		t.Logf("gateway log:\n%s", g.logs)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ---- HTTP ----

// sessionInfo is one element of GET /api/sessions.
type sessionInfo struct {
	Instance  string     `json:"instance"`
	Name      string     `json:"name"`
	Session   string     `json:"session"`
	Clients   int        `json:"clients"`
	IdleSince *time.Time `json:"idle_since"`
	BytesOut  int64      `json:"bytes_out"`
}

// request sends an HTTP request with the named token ("" for none) and
// returns the status and body.
func (g *gateway) request(t *testing.T, method, path, token string, hdr http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, g.baseURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+g.tokens[token])
	}
	resp, err := g.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, body
}

// sessions lists the sessions the token may see.
func (g *gateway) sessions(t *testing.T, token string) []sessionInfo {
	t.Helper()
	status, body := g.request(t, http.MethodGet, "/api/sessions", token, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /api/sessions: %d %s", status, body)
	}
	var out []sessionInfo
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET /api/sessions: %v in %s", err, body)
	}
	return out
}

// session is the instance's session as the admin token sees it (ok false
// when it has none).
func (g *gateway) session(t *testing.T, instance string) (sessionInfo, bool) {
	t.Helper()
	for _, s := range g.sessions(t, tokAdmin) {
		if s.Instance == instance {
			return s, true
		}
	}
	return sessionInfo{}, false
}

// waitClients waits until the instance's session has n clients attached.
func (g *gateway) waitClients(t *testing.T, instance string, n int) sessionInfo {
	t.Helper()
	var s sessionInfo
	eventually(t, fmt.Sprintf("%d clients attached to %s", n, instance), func() bool {
		var ok bool
		s, ok = g.session(t, instance)
		return ok && s.Clients == n
	})
	return s
}

// resetHTTP calls POST /api/instances/NAME/terminal/reset.
func (g *gateway) resetHTTP(t *testing.T, token, instance string) (int, map[string]string) {
	t.Helper()
	status, body := g.request(t, http.MethodPost, "/api/instances/"+instance+"/terminal/reset", token, nil)
	var out map[string]string
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("reset %s: %d, body %q is not a JSON object: %v", instance, status, body, err)
	}
	return status, out
}

// ---- Docker ----

// docker runs the docker CLI and returns its stdout.
func docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		what := args
		if len(what) > 3 {
			what = what[:3]
		}
		return stdout.String(), fmt.Errorf("docker %s: %v: %s", strings.Join(what, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// dockerExec runs a shell script in a container and returns its output.
func dockerExec(t *testing.T, name, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out, err := docker(ctx, "exec", name, "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// running reports whether the container is running.
func running(t *testing.T, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out, err := docker(ctx, "inspect", "--format", "{{.State.Running}}", name)
	return err == nil && strings.TrimSpace(out) == "true"
}

// markedScript prints "PID ARGS" for every live process whose environment
// holds TERMGATE_SESSION (zombies have an empty environment).
const markedScript = `for d in /proc/[0-9]*; do
	e=$(tr '\0' '\n' <"$d/environ" 2>/dev/null) || continue
	case "$e" in *TERMGATE_SESSION=*) echo "${d#/proc/} $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" ;; esac
done`

// markedProcesses lists the container's processes that carry the gateway's
// session marker.
func markedProcesses(t *testing.T, name string) []string {
	t.Helper()
	return nonEmptyLines(dockerExec(t, name, markedScript))
}

// proc is a live (non-zombie) process in a container.
type proc struct {
	pid  int
	stat string
	args string
}

func (p proc) String() string { return fmt.Sprintf("%d %s %s", p.pid, p.stat, p.args) }

// processes lists the container's processes, zombies left out.
func processes(t *testing.T, name string) []proc {
	t.Helper()
	var out []proc
	lines := nonEmptyLines(dockerExec(t, name, "ps -o pid,stat,args"))
	if len(lines) == 0 {
		t.Fatalf("ps in %s printed nothing", name)
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || strings.HasPrefix(f[1], "Z") {
			continue
		}
		out = append(out, proc{pid: pid, stat: f[1], args: strings.Join(f[2:], " ")})
	}
	return out
}

// findProcesses returns the container's live processes whose PID is pid or
// whose command line contains one of args.
func findProcesses(t *testing.T, name string, pid int, args ...string) []proc {
	t.Helper()
	var out []proc
	for _, p := range processes(t, name) {
		match := p.pid == pid
		for _, a := range args {
			match = match || strings.Contains(p.args, a)
		}
		if match {
			out = append(out, p)
		}
	}
	return out
}

// waitGone waits until none of the processes findProcesses would return
// is left.
func waitGone(t *testing.T, name string, pid int, args ...string) {
	t.Helper()
	var left []proc
	deadline := time.Now().Add(waitFor)
	for {
		if left = findProcesses(t, name, pid, args...); len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still runs, %s after it should have ended: %v", name, waitFor, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// ---- waiting ----

// eventually polls cond, bounded by waitFor, for state that has no event
// to wait on (a container's process list, the session table).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitFor, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
