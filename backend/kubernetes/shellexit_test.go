package kubernetes

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// Session semantics 7: a shell that exits while a background job holds
// its terminal open ends the session all the same, ordinary and durable
// alike: the SSH client gets the exit status, the WebSocket client the
// exit event, and neither the shell, the job nor a holder is left in the
// pod (issue 34 item 2).
func TestGatewayShellExitWithAJobInAPod(t *testing.T) {
	t.Parallel()
	shellExitWithAJob(t, newGateway(t), false)
}

// Not parallel: a --durable gateway adopts the held sessions of every pod
// under the run's label, the other tests' too.
func TestGatewayDurableShellExitWithAJobInAPod(t *testing.T) {
	needHolder(t)
	state := t.TempDir()
	shellExitWithAJob(t, startGateway(t, chmod700(t, state), "--durable"), true)
}

func shellExitWithAJob(t *testing.T, g *gateway, durable bool) {
	pod := runPod(t, nil)
	s := g.attachSSH(t, pod)
	s.pid() // the shell is up
	w, _ := g.attachWS(t, pod)
	s.send("(while true; do sleep 2; done) & echo job-$((40+2))")
	s.expect("job-42")
	if ps := podSh(t, pod, "ps -o args"); !strings.Contains(ps, "sleep 2") {
		t.Fatalf("the job does not run:\n%s", ps)
	}
	if ps := podSh(t, pod, "ps -o args"); durable != strings.Contains(ps, "serve --key-stdin") {
		t.Fatalf("durable %v, but the pod's processes:\n%s", durable, ps)
	}
	s.send("echo good\"\"bye; exit 3")
	s.expect("goodbye")
	select {
	case <-s.ended:
	case <-time.After(waitFor):
		t.Fatalf("the SSH session did not end within %s of the shell's exit", waitFor)
	}
	var exitErr *gossh.ExitError
	if !errors.As(s.err, &exitErr) || exitErr.ExitStatus() != 3 {
		t.Errorf("the SSH session ended with %v, want exit status 3", s.err)
	}
	for {
		ev := w.next() // bounded by waitFor
		if ev["type"] == "exit" {
			if code, _ := ev["code"].(float64); code != 3 {
				t.Errorf("websocket exit event %v, want code 3", ev)
			}
			break
		}
		if ev["type"] == "error" {
			t.Fatalf("websocket: %v, want an exit event with code 3", ev)
		}
	}
	// Nothing of the session is left in the pod.
	var ps string
	for deadline := time.Now().Add(waitFor); ; time.Sleep(200 * time.Millisecond) {
		ps = podSh(t, pod, "ps -o stat,args | grep -v '^Z'")
		left := len(markedProcesses(t, pod)) > 0 || strings.Contains(ps, "sleep 2") || strings.Contains(ps, "serve --key-stdin")
		if !left {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the shell's exit the pod still runs its session's processes:\n%s\nmarked: %v", waitFor, ps, markedProcesses(t, pod))
		}
	}
}

func chmod700(t *testing.T, dir string) string {
	t.Helper()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
