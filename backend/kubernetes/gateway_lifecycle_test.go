package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gossh "golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// More of the contract over both listeners against pods: resize, exit
// codes, a restarted container, idle reaping.

func (w *wsClient) control(msg map[string]any) {
	w.t.Helper()
	b, _ := json.Marshal(msg)
	if err := w.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		w.t.Fatalf("websocket: control %s: %v", b, err)
	}
}

// waitStty asks the shell for its window size until it is want ("ROWS
// COLS"): a resize reaches the exec's resize stream asynchronously.
func waitStty(t *testing.T, send func(string), expect func(string) []string, want string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		// Right after the start the pod's terminal may still be 0x0:
		// Kubernetes' exec takes its first size on the resize stream,
		// after the exec began, and busybox's stty then prints nothing.
		send(`echo "S=$(stty size)"`)
		if m := expect(`S=([0-9 ]*)\r?\n`); m[1] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell never saw the window size %s", want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestGatewayResizeAndExitCodeInAPod(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	pod := runPod(t, nil)

	s := g.attachSSH(t, pod)
	waitStty(t, s.send, s.expect, "24 80") // the PTY request's size
	if err := s.sess.WindowChange(50, 132); err != nil {
		t.Fatal(err)
	}
	waitStty(t, s.send, s.expect, "50 132")

	w, _ := g.attachWS(t, pod)
	w.control(map[string]any{"type": "resize", "cols": 101, "rows": 31})
	waitStty(t, w.send, w.expect, "31 101")

	// The shell's exit status reaches both: the SSH exit status and the
	// WebSocket exit event.
	w.send("exit 7")
	for {
		ev := w.next()
		if ev["type"] == "exit" {
			if code, _ := ev["code"].(float64); code != 7 {
				t.Errorf("websocket exit event %v, want code 7", ev)
			}
			break
		}
		if ev["type"] == "error" {
			t.Fatalf("websocket: %v, want an exit event with code 7", ev)
		}
	}
	select {
	case <-s.ended:
	case <-time.After(waitFor):
		t.Fatalf("the SSH session did not end within %s of the shell's exit", waitFor)
	}
	var exitErr *gossh.ExitError
	if !errors.As(s.err, &exitErr) || exitErr.ExitStatus() != 7 {
		t.Errorf("the SSH session ended with %v, want exit status 7", s.err)
	}
}

// restartablePod runs a container whose PID 1 exits once /tmp/restart
// exists, so the kubelet restarts it (a fresh container: no /tmp/restart).
func restartablePod(p *corev1.Pod) {
	p.Spec.Containers[0].Command = []string{"sh", "-c", `while [ ! -e /tmp/restart ]; do sleep 0.2; done`}
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
}

func TestGatewayRestartedContainerGetsAFreshSession(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	pod := runPod(t, restartablePod)
	s := g.attachSSH(t, pod)
	s.send("echo before-$((40+2))")
	s.expect("before-42")

	_ = podSh(t, pod, "touch /tmp/restart")

	select {
	case <-s.ended:
	case <-time.After(waitFor):
		t.Fatalf("the SSH session did not end within %s of its container's restart", waitFor)
	}
	if notice := regexp.MustCompile(`\[termgate\][^\r\n]*stopped`); !notice.MatchString(s.errOut.String()) {
		t.Errorf("the SSH client got no notice that the instance stopped; stderr %q", s.errOut.String())
	}

	// Once the container runs again, an attach starts a fresh session
	// in it: no replay of the old shell's output.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		p, err := clusterCS.CoreV1().Pods(testNS).Get(ctx, pod, metav1.GetOptions{})
		if err == nil && len(p.Status.ContainerStatuses) == 1 {
			st := p.Status.ContainerStatuses[0]
			if st.RestartCount >= 1 && st.State.Running != nil {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the container was not restarted within 60s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	w, ev := g.attachWS(t, pod)
	if ev["new"] != true {
		t.Errorf("the attach after the restart joined an old session: %v", ev)
	}
	w.send("echo after-$((40+3))")
	w.expect("after-43")
	if strings.Contains(w.out.String(), "before-42") {
		t.Errorf("the fresh session replayed the old shell's output: %q", w.out.String())
	}
}

func TestGatewayIdleSessionIsReaped(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, state, "--idle-timeout", "2s")
	pod := runPod(t, nil)
	s := g.attachSSH(t, pod)
	s.send("sleep 3579 & echo bg-$((1+1))")
	s.expect("bg-2")
	if ps := strings.Join(markedProcesses(t, pod), "\n"); !strings.Contains(ps, "sleep 3579") {
		t.Fatalf("the shell's job does not show:\n%s", ps)
	}
	s.close()

	// Two seconds after the last client left, the session and everything
	// it started are gone.
	deadline := time.Now().Add(waitFor)
	for {
		ps := strings.Join(markedProcesses(t, pod), "\n")
		if ps == "" && len(g.sessions(t)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the last client left, the idle session is still there: sessions %v, processes:\n%s",
				waitFor, g.sessions(t), ps)
		}
		time.Sleep(250 * time.Millisecond)
	}
	_, ev := g.attachWS(t, pod)
	if ev["new"] != true {
		t.Errorf("the attach after the reaping joined an old session: %v", ev)
	}
}

// sessions lists GET /api/sessions.
func (g *gateway) sessions(t *testing.T) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+g.httpAddr+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+g.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
		t.Fatalf("GET /api/sessions: %s %s", resp.Status, body)
	}
	return out
}

func TestGatewayPodEvictionEndsTheSession(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	pod := runPod(t, nil)
	w, _ := g.attachWS(t, pod)
	w.send("echo up-$((40+2))")
	w.expect("up-42")

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	err := clusterCS.PolicyV1().Evictions(testNS).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: testNS},
	})
	if err != nil {
		t.Fatalf("evict %s: %v", pod, err)
	}
	ev := w.next()
	if msg, _ := ev["message"].(string); ev["type"] != "error" || !strings.Contains(msg, "stopped") {
		t.Errorf("the WebSocket client got %v, want an error event saying the instance stopped", ev)
	}
}

// TestGatewaySIGTERMEndsEverySession: the gateway tells its clients, ends
// every session, leaves no process in the pod and exits within 10 s.
func TestGatewaySIGTERMEndsEverySession(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	pod := runPod(t, nil)
	s := g.attachSSH(t, pod)
	s.send("sleep 9753 & echo bg-$((1+1))")
	s.expect("bg-2")
	other := runPod(t, nil)
	w, _ := g.attachWS(t, other)
	w.send("sleep 9754 & echo bg-$((1+2))")
	w.expect("bg-3")

	took, err := g.proc.Stop(10 * time.Second)
	if err != nil {
		t.Fatalf("%v:\n%s", err, g.logs)
	}
	t.Logf("the gateway exited %s after SIGTERM", took.Round(10*time.Millisecond))
	select {
	case <-s.ended:
	case <-time.After(waitFor):
		t.Fatal("the SSH session did not end with the gateway")
	}
	if !regexp.MustCompile(`\[termgate\]`).MatchString(s.errOut.String()) {
		t.Errorf("the SSH client got no notice; stderr %q", s.errOut.String())
	}
	for _, p := range []string{pod, other} {
		if ps := markedProcesses(t, p); len(ps) > 0 {
			t.Errorf("processes of the gateway's sessions left in %s after SIGTERM:\n%s", p, strings.Join(ps, "\n"))
		}
	}
}
