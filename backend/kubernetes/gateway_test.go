package kubernetes

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

// These tests run the real gateway binary with --backend kubernetes against
// the test cluster, and reach it over SSH and WebSocket as users do.

const waitFor = 20 * time.Second

var (
	gatewayOnce   sync.Once
	gatewayBinDir string
	gatewayBin    string
	gatewayErr    error
)

// buildGateway builds cmd/termgate once per run.
func buildGateway(t *testing.T) string {
	t.Helper()
	gatewayOnce.Do(func() {
		gatewayBinDir, gatewayErr = os.MkdirTemp("", "tgk8s-bin-")
		if gatewayErr != nil {
			return
		}
		gatewayBin = filepath.Join(gatewayBinDir, "termgate")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		gatewayErr = gatewayproc.Build(ctx, gatewayBin)
	})
	if gatewayErr != nil {
		t.Fatal(gatewayErr)
	}
	return gatewayBin
}

// gateway is a running termgate --backend kubernetes for the run's
// namespace and label.
type gateway struct {
	t        *testing.T
	sshAddr  string
	httpAddr string
	signer   gossh.Signer
	hostKey  gossh.PublicKey
	token    string
	logs     *termtest.Stream
	proc     *gatewayproc.Gateway
}

func newGateway(t *testing.T) *gateway {
	t.Helper()
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	return startGateway(t, state)
}

// startGateway runs the gateway with its state in state (a fresh client
// key and token each time; the host key, and so the gateway's id, stays)
// and extra flags, and waits until /readyz says its backend is ready.
func startGateway(t *testing.T, state string, extra ...string) *gateway {
	t.Helper()
	needCluster(t)
	// The holder's path reaches the gateway through this process's
	// environment (needHolder sets it): set before any gateway starts,
	// so that it is the same for every one whichever parallel test
	// builds the holder first.
	needHolder(t)
	bin := buildGateway(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, signer: signer, token: randomHex(24)}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(state, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("authorized_keys", string(gossh.MarshalAuthorizedKey(signer.PublicKey())))
	write("api_token", g.token+" admin\n")
	g.proc, err = gatewayproc.Start(context.Background(), gatewayproc.Config{
		Bin: bin, StateDir: state,
		Args: append([]string{
			"--backend", "kubernetes",
			"--kubeconfig", kubeconfigPath(),
			"--kube-namespace", testNS,
			"--instance-label", runLabel,
			"--log-level", "debug",
		}, extra...),
	})
	if err != nil {
		t.Fatal(err)
	}
	g.sshAddr, g.httpAddr, g.logs = g.proc.SSHAddr, g.proc.HTTPAddr, g.proc.Log
	t.Cleanup(g.stop)
	for deadline := time.Now().Add(waitFor); readyz(g) != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway was not ready within %s:\n%s", waitFor, g.logs)
		}
	}
	if g.hostKey, err = g.proc.HostKey(); err != nil {
		t.Fatal(err)
	}
	return g
}

// stop ends the gateway with SIGTERM, unless a test ended it, and checks
// that it exits in time.
func (g *gateway) stop() {
	if g.proc.Running() {
		if _, err := g.proc.Stop(15 * time.Second); err != nil {
			g.t.Error(err)
		}
	}
	if g.t.Failed() {
		g.t.Logf("gateway log:\n%s", g.logs)
	}
}

// term is an interactive SSH session with a PTY.
type term struct {
	t      *testing.T
	c      *gossh.Client
	sess   *gossh.Session
	stdin  io.Writer
	out    *termtest.Stream
	errOut *termtest.Stream
	ended  chan struct{}
	err    error
	seen   int
}

func (g *gateway) attachSSH(t *testing.T, pod string) *term {
	t.Helper()
	c, err := gossh.Dial("tcp", g.sshAddr, &gossh.ClientConfig{
		User: pod, Auth: []gossh.AuthMethod{gossh.PublicKeys(g.signer)},
		HostKeyCallback: gossh.FixedHostKey(g.hostKey), Timeout: waitFor,
	})
	if err != nil {
		t.Fatalf("ssh %s@: %v", pod, err)
	}
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, c: c, sess: s, out: termtest.NewStream(), errOut: termtest.NewStream(), ended: make(chan struct{})}
	s.Stdout, s.Stderr = tm.out, tm.errOut
	if tm.stdin, err = s.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() {
		tm.err = s.Wait()
		close(tm.ended)
	}()
	t.Cleanup(tm.close)
	return tm
}

func (tm *term) close() {
	_ = tm.c.Close()
	<-tm.ended
}

func (tm *term) send(line string) {
	tm.t.Helper()
	if _, err := io.WriteString(tm.stdin, line+"\r"); err != nil {
		tm.t.Fatalf("ssh: type %q: %v", line, err)
	}
}

func (tm *term) expect(re string) []string {
	tm.t.Helper()
	m, at := tm.out.WaitFor(regexp.MustCompile(re), tm.seen, waitFor)
	if m == nil {
		tm.t.Fatalf("ssh: no %q in the output within %s:\n%q\nstderr %q", re, waitFor, tm.out.String()[tm.seen:], tm.errOut.String())
	}
	tm.seen = at
	return m
}

// pid asks the shell for its PID.
func (tm *term) pid() int {
	tm.t.Helper()
	tag := "pid" + randomHex(3)
	tm.send("echo " + tag + "=$$")
	pid, _ := strconv.Atoi(tm.expect(tag + `=(\d+)`)[1])
	return pid
}

// wsClient is an attached WebSocket client.
type wsClient struct {
	t      *testing.T
	conn   *websocket.Conn
	out    *termtest.Stream
	events chan map[string]any
	closed chan struct{}
	seen   int
}

func (g *gateway) attachWS(t *testing.T, pod string) (*wsClient, map[string]any) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitFor}
	conn, resp, err := d.Dial("ws://"+g.httpAddr+"/api/instances/"+pod+"/terminal",
		http.Header{"Authorization": {"Bearer " + g.token}})
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("websocket to %s: %v %s", pod, err, status)
	}
	w := &wsClient{t: t, conn: conn, out: termtest.NewStream(), events: make(chan map[string]any, 64), closed: make(chan struct{})}
	go func() {
		defer close(w.closed)
		for {
			typ, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if typ == websocket.BinaryMessage {
				_, _ = w.out.Write(data)
				continue
			}
			var ev map[string]any
			if json.Unmarshal(data, &ev) == nil {
				w.events <- ev
			}
		}
	}()
	t.Cleanup(w.close)
	ev := w.next()
	if ev["type"] != "attached" {
		t.Fatalf("websocket: first event %v, want attached", ev)
	}
	return w, ev
}

func (w *wsClient) close() {
	_ = w.conn.Close()
	<-w.closed
}

func (w *wsClient) next() map[string]any {
	w.t.Helper()
	select {
	case ev := <-w.events:
		return ev
	case <-time.After(waitFor):
		w.t.Fatalf("websocket: no event within %s", waitFor)
	}
	return nil
}

func (w *wsClient) send(line string) {
	w.t.Helper()
	if err := w.conn.WriteMessage(websocket.BinaryMessage, []byte(line+"\r")); err != nil {
		w.t.Fatalf("websocket: type %q: %v", line, err)
	}
}

func (w *wsClient) expect(re string) []string {
	w.t.Helper()
	m, at := w.out.WaitFor(regexp.MustCompile(re), w.seen, waitFor)
	if m == nil {
		w.t.Fatalf("websocket: no %q in the output within %s:\n%q", re, waitFor, w.out.String()[w.seen:])
	}
	w.seen = at
	return m
}

func TestGatewayAttachReattachAndResetInAPod(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	pod := runPod(t, nil)

	s := g.attachSSH(t, pod)
	pid := s.pid()
	s.send("echo first-$((40+2))")
	s.expect("first-42")

	// A WebSocket client joins the same shell and gets the replay.
	w, ev := g.attachWS(t, pod)
	if ev["new"] == true {
		t.Errorf("the WebSocket attach started a new session: %v", ev)
	}
	w.expect("first-42")
	w.send("echo pid-ws=$$")
	if got := w.expect(`pid-ws=(\d+)`)[1]; got != strconv.Itoa(pid) {
		t.Errorf("the WebSocket client's shell has PID %s, the SSH client's %d", got, pid)
	}
	s.expect(`pid-ws=\d+`) // both see one shell's output

	// Both leave; a reattach lands in the same shell, with the replay.
	s.close()
	w.close()
	s2 := g.attachSSH(t, pod)
	s2.expect("first-42")
	if got := s2.pid(); got != pid {
		t.Errorf("reattached to PID %d, want the same shell %d", got, pid)
	}

	// A reset kills the shell and its background job, and starts afresh.
	s2.send("sleep 2468 & echo job-$((1+1))")
	s2.expect("job-2")
	req, _ := http.NewRequest(http.MethodPost, "http://"+g.httpAddr+"/api/instances/"+pod+"/terminal/reset", nil)
	req.Header.Set("Authorization", "Bearer "+g.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %s %s", resp.Status, body)
	}
	if got := s2.pid(); got == pid {
		t.Errorf("after the reset the shell is still PID %d", pid)
	}
	if ps := strings.Join(markedProcesses(t, pod), "\n"); strings.Contains(ps, "sleep 2468") {
		t.Errorf("the reset left the old shell's job:\n%s", ps)
	}
}

func TestGatewayPodDeletionEndsTheSession(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	pod := runPod(t, nil)
	s := g.attachSSH(t, pod)
	s.send("echo up-$((40+2))")
	s.expect("up-42")
	w, _ := g.attachWS(t, pod)

	deletePod(t, pod, false)

	ev := w.next()
	if msg, _ := ev["message"].(string); ev["type"] != "error" || !strings.Contains(msg, "stopped") {
		t.Errorf("the WebSocket client got %v, want an error event saying the instance stopped", ev)
	}
	select {
	case <-s.ended:
	case <-time.After(waitFor):
		t.Fatalf("the SSH session did not end within %s of the pod's deletion", waitFor)
	}
	if notice := regexp.MustCompile(`\[termgate\][^\r\n]*stopped`); !notice.MatchString(s.errOut.String()) {
		t.Errorf("the SSH client got no notice that the instance stopped; stderr %q", s.errOut.String())
	}
	var exitErr *gossh.ExitError
	if !errors.As(s.err, &exitErr) || exitErr.ExitStatus() == 0 {
		t.Errorf("the SSH session ended with %v, want a non-zero exit status", s.err)
	}
}
