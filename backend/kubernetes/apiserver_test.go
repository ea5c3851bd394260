package kubernetes

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// These tests restart the test cluster's API server (scripts/k8s-cluster.sh
// restart-apiserver, a few seconds): every watch and exec stream through it
// breaks, as in a control-plane upgrade.

func restartAPIServer(t *testing.T) {
	t.Helper()
	needCluster(t)
	dir := os.Getenv("TERMGATE_K8S_DIR")
	if dir == "" {
		dir = "/var/cache/termgate-k8s"
	}
	if kubeconfigPath() != filepath.Join(dir, "etc", "admin.kubeconfig") {
		t.Skipf("KUBECONFIG=%s is not the test cluster of scripts/k8s-cluster.sh, whose API server this test restarts", kubeconfigPath())
	}
	start := time.Now()
	out, err := exec.Command("bash", "../../scripts/k8s-cluster.sh", "restart-apiserver").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/k8s-cluster.sh restart-apiserver: %v\n%s", err, out)
	}
	t.Logf("API server restarted in %s", time.Since(start).Round(100*time.Millisecond))
}

func goneEvent(t *testing.T, evs <-chan sessions.InstanceEvent, pod string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-evs:
			if e.Gone && e.Instance.Name == pod {
				return
			}
		case <-deadline:
			t.Fatalf("Watch did not report %s gone within 30s", pod)
		}
	}
}

// TestWatchSeesPodsStopAfterAPIServerRestart: the informer lists and
// watches again after the API server comes back.
func TestWatchSeesPodsStopAfterAPIServerRestart(t *testing.T) {
	b := clusterBackend(t, Config{})
	synced := make(chan struct{})
	b.watchSynced = func() { close(synced) }
	before, after := runPod(t, nil), runPod(t, nil)
	evs := watching(t, b)
	select {
	case <-synced:
	case <-time.After(waitFor):
		t.Fatalf("Watch did not list the pods within %s", waitFor)
	}
	deletePod(t, before, false)
	goneEvent(t, evs, before) // the watch is up

	restartAPIServer(t)
	deletePod(t, after, false)
	goneEvent(t, evs, after)
}

// TestGatewayThroughAPIServerRestart is what users see: /readyz fails while
// the API server is away; the session, whose exec stream went with it,
// ends visibly and its shell is killed once the API server is back; the
// next attach gets a fresh shell; a pod deleted afterwards still ends its
// session (the watch came back).
func TestGatewayThroughAPIServerRestart(t *testing.T) {
	g := newGateway(t)
	pod := runPod(t, nil)
	s := g.attachSSH(t, pod)
	s.send("sleep 4680 & echo before-$((40+2))")
	s.expect("before-42")

	var notReady atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if readyz(g) != http.StatusOK {
				notReady.Store(true)
			}
		}
	})
	restartAPIServer(t)
	close(stop)
	wg.Wait()
	if !notReady.Load() {
		t.Error("/readyz never failed while the API server was down")
	}
	deadline := time.Now().Add(waitFor)
	for readyz(g) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not OK within %s of the API server's return", waitFor)
		}
		time.Sleep(100 * time.Millisecond)
	}

	select {
	case <-s.ended:
	case <-time.After(waitFor):
		t.Fatalf("the SSH session did not end within %s of losing its exec stream", waitFor)
	}
	if !regexp.MustCompile(`\[termgate\]`).MatchString(s.errOut.String()) {
		t.Errorf("the SSH client got no notice why the session ended; stderr %q", s.errOut.String())
	}

	// The old shell and its job are killed; a new attach gets a fresh
	// shell (it is refused, asking to try again shortly, until the
	// gateway's kill of the old one has returned).
	deadline = time.Now().Add(30 * time.Second)
	for strings.Contains(strings.Join(markedProcesses(t, pod), "\n"), "sleep 4680") {
		if time.Now().After(deadline) {
			t.Fatalf("the lost session's job still runs 30s after the API server's return:\n%s", markedProcesses(t, pod))
		}
		time.Sleep(250 * time.Millisecond)
	}
	s2 := g.attachSSHRetrying(t, pod)
	s2.send("echo after-$((40+3))")
	s2.expect("after-43")
	if strings.Contains(s2.out.String(), "before-42") {
		t.Errorf("the attach after the restart replayed the lost session: %q", s2.out.String())
	}

	deletePod(t, pod, false)
	select {
	case <-s2.ended:
	case <-time.After(waitFor):
		t.Fatalf("the SSH session did not end within %s of the pod's deletion", waitFor)
	}
	if notice := regexp.MustCompile(`\[termgate\][^\r\n]*stopped`); !notice.MatchString(s2.errOut.String()) {
		t.Errorf("the SSH client got no notice that the instance stopped; stderr %q", s2.errOut.String())
	}
}

func readyz(g *gateway) int {
	c := http.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, "http://"+g.httpAddr+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+g.token)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// attachSSHRetrying attaches as a user would while the gateway refuses
// because the previous shell is still being ended: again, for up to 30 s.
func (g *gateway) attachSSHRetrying(t *testing.T, pod string) *term {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := g.attachSSH(t, pod)
		select {
		case <-s.ended:
		case <-time.After(2 * time.Second):
			return s // not refused
		}
		if !strings.Contains(s.errOut.String(), "still being ended") || time.Now().After(deadline) {
			t.Fatalf("ssh %s@: the session ended at once: %v, stderr %q", pod, s.err, s.errOut.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}
