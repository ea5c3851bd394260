package kubernetes

import (
	"context"
	"crypto/rand"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// halfClosePod runs the three services of the half-close tests (busybox
// nc): 8081 answers "hello" and closes; 8082 answers "hello", shuts down
// its write side and keeps reading into /tmp/got; 8083 reads to EOF and
// answers "late" 2 s later (longer than the runtime's port-forward waits).
func halfClosePod(t *testing.T, mutate func(*corev1.Pod)) string {
	t.Helper()
	return runPod(t, func(p *corev1.Pod) {
		p.Spec.Containers[0].Command = []string{"sh", "-c", `nc -ll -p 8080 -e cat &
nc -ll -p 8081 -e echo hello &
(while :; do echo hello | nc -l -p 8082 >>/tmp/got; done) &
nc -ll -p 8083 -e sh -c 'wc -c; sleep 2; echo late' &
exec sleep 100000`}
		if mutate != nil {
			mutate(p)
		}
	})
}

// TestDialPassesEachSidesEnd: through termgate's helper (Dial's first
// way), each side's end reaches the other while the other direction goes
// on, as on Docker: the pod's close, the pod's half-close with the client
// still sending, the client's half-close with a late answer; no helper is
// left in the pod.
func TestDialPassesEachSidesEnd(t *testing.T) {
	t.Parallel()
	needHolder(t)
	pod := halfClosePod(t, nil)
	b := clusterBackend(t, Config{})
	inst := lookupPod(t, b, pod)

	c := dialRetry(t, b.Dial, inst, 8081)
	if got := readAllWithin(t, c); got != "hello\n" {
		t.Fatalf("8081: read %q, want hello", got)
	}
	_ = c.Close()

	c = dialRetry(t, b.Dial, inst, 8082)
	if got := readAllWithin(t, c); got != "hello\n" {
		t.Fatalf("8082: read %q, want hello", got)
	}
	time.Sleep(1500 * time.Millisecond) // longer than the runtime's port-forward grace: the helper has none
	if _, err := io.WriteString(c, "after the pod's end\n"); err != nil {
		t.Fatalf("write after the pod's end: %v", err)
	}
	_ = c.CloseWrite()
	for deadline := time.Now().Add(halfCloseWait); !strings.Contains(podSh(t, pod, "cat /tmp/got"), "after the pod's end"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pod did not receive what came after its end: %q", podSh(t, pod, "cat /tmp/got"))
		}
	}
	_ = c.Close()

	c = dialRetry(t, b.Dial, inst, 8083)
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	go func() {
		_, _ = c.Write(data)
		_ = c.CloseWrite()
	}()
	if got := strings.Fields(readAllWithin(t, c)); len(got) != 2 || got[0] != strconv.Itoa(len(data)) || got[1] != "late" {
		t.Fatalf("8083: answer %q, want the count and the late line", got)
	}
	_ = c.Close()

	for deadline := time.Now().Add(halfCloseWait); strings.Contains(podSh(t, pod, "ps -o args"), " dial "); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a dial helper is left in the pod:\n%s", podSh(t, pod, "ps -o args"))
		}
	}
}

// TestDialFallsBackToPortForward: in a pod where the helper cannot run (a
// read-only root: nowhere to put it), Dial goes through pods/portforward.
// There the pod's close reaches the client at once (the runtime ends the
// forward within about a second of either direction's end; what that
// cuts is in portForwardDial's comment and docs/RELIABILITY.md).
func TestDialFallsBackToPortForward(t *testing.T) {
	t.Parallel()
	needHolder(t)
	pod := halfClosePod(t, func(p *corev1.Pod) {
		ro := true
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: &ro}
	})
	b := clusterBackend(t, Config{})
	inst := lookupPod(t, b, pod)
	echoExact(t, dialRetry(t, b.Dial, inst, 8080), []byte("through the port-forward\n"))
	c := dialRetry(t, b.Dial, inst, 8081)
	defer c.Close()
	if got := readAllWithin(t, c); got != "hello\n" {
		t.Fatalf("8081: read %q, want hello", got)
	}
}

// halfCloseWait bounds each wait for an end to come through.
const halfCloseWait = 20 * time.Second

type dialFunc func(ctx context.Context, inst sessions.Instance, host string, port int) (remote.Conn, error)

// dialRetry dials port until its listener (started with the pod) accepts.
func dialRetry(t *testing.T, dial dialFunc, inst sessions.Instance, port int) remote.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel) // the connection lives under ctx
	for {
		c, err := dial(ctx, inst, "127.0.0.1", port)
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("Dial port %d: %v", port, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readAllWithin reads c to its EOF, which must come within
// halfCloseWait; c is closed when it does not.
func readAllWithin(t *testing.T, c remote.Conn) string {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(c)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("read %q, then %v", r.b, r.err)
		}
		return string(r.b)
	case <-time.After(halfCloseWait):
		_ = c.Close()
		r := <-done
		t.Fatalf("no EOF within %v (read %q): the other side's end was not passed on", halfCloseWait, r.b)
		return ""
	}
}
