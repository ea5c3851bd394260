package kubernetes

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// A --durable gateway killed with SIGKILL loses no pod shell: the next
// one (same state, so the same gateway id, whose start-up sweep ends only
// non-held shells) adopts it, and a client returns to the same shell with
// the replay; a reset through it kills the shell and its job.
//
// Not parallel: a --durable gateway adopts the held sessions of every pod
// under the run's label, the other tests' too.
func TestGatewayDurableSurvivesKill9InAPod(t *testing.T) {
	needHolder(t)
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	g1 := startGateway(t, state, "--durable")
	pod := runPod(t, nil)
	s := g1.attachSSH(t, pod)
	pid := s.pid()
	s.send("sleep 2468 & echo before-$((40+2))")
	s.expect("before-42")

	g1.proc.Kill()
	select {
	case <-s.ended:
	case <-time.After(waitFor):
		t.Fatal("the SSH client did not see the killed gateway go")
	}

	g2 := startGateway(t, state, "--durable")
	if !strings.Contains(g2.logs.String(), "adopt") {
		t.Logf("the restarted gateway's log says nothing of adoption:\n%s", g2.logs)
	}
	s2 := g2.attachSSH(t, pod)
	s2.expect("before-42") // the replay, from the holder
	if got := s2.pid(); got != pid {
		t.Fatalf("after the gateway's SIGKILL and restart the shell is PID %d, want %d", got, pid)
	}
	if ps := strings.Join(markedProcesses(t, pod), "\n"); !strings.Contains(ps, "sleep 2468") {
		t.Errorf("the job did not survive the gateway:\n%s", ps)
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+g2.httpAddr+"/api/instances/"+pod+"/terminal/reset", nil)
	req.Header.Set("Authorization", "Bearer "+g2.token)
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
