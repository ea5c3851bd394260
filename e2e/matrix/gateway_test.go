package matrix

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

// gateway is a running termgate for one column, with the OpenSSH key and
// the token its clients use.
type gateway struct {
	t       *testing.T
	proc    *gatewayproc.Gateway
	keyFile string // OpenSSH private key in authorized_keys
	token   string
	home    string // HOME for ssh
}

// startGateway starts a gateway for e (reaching its engine through p)
// with extra flags.
func startGateway(t *testing.T, e engine, p *proxy, extra ...string) *gateway {
	t.Helper()
	state := t.TempDir()
	g := &gateway{t: t, keyFile: filepath.Join(state, "id_ed25519"), token: fmt.Sprintf("tok%d", time.Now().UnixNano()), home: t.TempDir()}
	commandT(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", g.keyFile)
	pub, err := os.ReadFile(g.keyFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"authorized_keys": string(pub), "api_token": g.token + " admin\n"} {
		if err := os.WriteFile(filepath.Join(state, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := append(append(e.gatewayArgs(), "--shell", "/bin/sh", "--replay", "screen", "--log-level", "debug"), extra...)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	g.proc, err = gatewayproc.Start(ctx, gatewayproc.Config{Bin: gatewayBin, StateDir: state, Args: args, Env: e.gatewayEnv(p)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := g.proc.Stop(15 * time.Second); err != nil {
			t.Errorf("gateway stop: %v", err)
		}
		if t.Failed() {
			t.Logf("gateway log (%s):\n%s", e.name(), g.proc.Tail(200))
		}
	})
	return g
}

// ssh starts OpenSSH's ssh with args after the gateway's port and key.
func (g *gateway) ssh(t *testing.T, args ...string) *sshRun {
	t.Helper()
	return g.sshTo(t, nil, args...)
}

// sshW runs ssh -W addr through inst, its stdout a pipe the test reads
// to EOF: the forward's end is the pipe's.
func (g *gateway) sshW(t *testing.T, addr, inst string) (*sshRun, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pr.Close() })
	r := g.sshTo(t, pw, "-W", addr, inst+"@127.0.0.1")
	_ = pw.Close() // ssh has its own copy
	return r, pr
}

// sshTo starts ssh with stdout to out (nil: the run's stream).
func (g *gateway) sshTo(t *testing.T, out *os.File, args ...string) *sshRun {
	t.Helper()
	_, port, _ := net.SplitHostPort(g.proc.SSHAddr)
	base := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", g.keyFile, "-p", port}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	cmd := exec.CommandContext(ctx, "ssh", append(base, args...)...)
	cmd.Env = []string{"HOME=" + g.home, "PATH=" + os.Getenv("PATH"), "TERM=xterm"}
	r := &sshRun{cmd: cmd, out: termtest.NewStream(), errOut: &termtest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.errOut
	if out != nil {
		cmd.Stdout = out
	}
	var err error
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		r.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
		_ = err
		cancel()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		cancel()
		<-r.done
	})
	return r
}

// sshRun is a running ssh.
type sshRun struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *termtest.Stream
	errOut *termtest.SyncBuffer
	done   chan struct{}
	code   int // after done
}

func (r *sshRun) expect(t *testing.T, re string) []string {
	t.Helper()
	m, _ := r.out.WaitFor(regexp.MustCompile(re), 0, waitFor)
	if m == nil {
		t.Fatalf("ssh never printed %s; it printed %q; stderr %q", re, r.out.String(), r.errOut.String())
	}
	return m
}

// exit waits for ssh to end and returns its exit code.
func (r *sshRun) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(waitFor):
		t.Fatalf("ssh did not end within %s; it printed %q; stderr %q", waitFor, r.out.String(), r.errOut.String())
		return -1
	}
}

// wsClient is a WebSocket attach that reads only when told to.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	mu   sync.Mutex
}

// ws attaches over WebSocket; rcvbuf, when set, shrinks the socket's
// receive buffer so that a client that stops reading stops the gateway's
// writes soon.
func (g *gateway) ws(t *testing.T, inst string, rcvbuf int) *wsClient {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitFor, NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nd := net.Dialer{}
		if rcvbuf > 0 {
			nd.Control = func(_, _ string, c syscall.RawConn) error {
				var serr error
				err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
				if err != nil {
					return err
				}
				return serr
			}
		}
		return nd.DialContext(ctx, network, addr)
	}}
	u := "ws://" + g.proc.HTTPAddr + "/api/instances/" + url.PathEscape(inst) + "/terminal?cols=80&rows=24"
	h := http.Header{"Authorization": {"Bearer " + g.token}}
	conn, resp, err := d.Dial(u, h)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("websocket attach to %s: %v %s", inst, err, status)
	}
	t.Cleanup(func() { _ = conn.Close() })
	w := &wsClient{t: t, conn: conn}
	if ev := w.event(); ev["type"] != "attached" {
		t.Fatalf("first websocket event %v, want attached", ev)
	}
	return w
}

// event reads up to the next text event, skipping output.
func (w *wsClient) event() map[string]any {
	w.t.Helper()
	for {
		typ, msg := w.read()
		if typ == websocket.TextMessage {
			var ev map[string]any
			if err := json.Unmarshal(msg, &ev); err != nil {
				w.t.Fatalf("websocket event %q: %v", msg, err)
			}
			return ev
		}
	}
}

func (w *wsClient) read() (int, []byte) {
	w.t.Helper()
	_ = w.conn.SetReadDeadline(time.Now().Add(waitFor))
	typ, msg, err := w.conn.ReadMessage()
	if err != nil {
		w.t.Fatalf("websocket read: %v", err)
	}
	return typ, msg
}

// until reads until the output since this call matches re, and returns
// the text events seen on the way.
func (w *wsClient) until(re string) []map[string]any {
	w.t.Helper()
	rx := regexp.MustCompile(re)
	var out strings.Builder
	var events []map[string]any
	for !rx.MatchString(out.String()) {
		typ, msg := w.read()
		if typ == websocket.TextMessage {
			var ev map[string]any
			_ = json.Unmarshal(msg, &ev)
			events = append(events, ev)
			continue
		}
		out.Write(msg)
	}
	return events
}

func (w *wsClient) send(s string) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		w.t.Fatalf("websocket write: %v", err)
	}
}
