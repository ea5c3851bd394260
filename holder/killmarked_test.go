package holder

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillMarkersEndsMarkedAndDescendants: the kill for an instance
// without a shell ends a marked command, its job that cleared its
// environment (env -i) and nothing else; its output names what it ended
// in the kill script's format.
func TestKillMarkersEndsMarkedAndDescendants(t *testing.T) {
	dir := t.TempDir()
	pidFile := dir + "/pids"
	cmd := exec.Command("/bin/sh", "-c", `env -i /bin/sh -c 'sleep 1001 & echo $! >>`+pidFile+`; wait' & sleep 1002 & echo $! >>`+pidFile+`; wait`)
	cmd.Env = append(os.Environ(), "TERMGATE_SESSION=gw1.c-abc")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	bystander := exec.Command("sleep", "1003")
	bystander.Env = append(os.Environ(), "TERMGATE_SESSION=gw1.c-other")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bystander.Process.Kill(); _ = bystander.Wait() }()

	var pids []int
	for deadline := time.Now().Add(5 * time.Second); len(pids) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the jobs did not start (pids %v)", pids)
		}
		time.Sleep(20 * time.Millisecond)
		b, _ := os.ReadFile(pidFile)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}

	var out strings.Builder
	KillMarkers(&out, []string{"gw1.c-abc"}, nil, false)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the marked command still runs")
	}
	for _, pid := range pids {
		for deadline := time.Now().Add(5 * time.Second); processExists(pid) && !isZombie(pid); {
			if time.Now().After(deadline) {
				t.Fatalf("job %d survived (output %q)", pid, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !processExists(bystander.Process.Pid) || isZombie(bystander.Process.Pid) {
		t.Fatalf("a process of another marker was killed")
	}
	if !strings.Contains(out.String(), "killed "+strconv.Itoa(cmd.Process.Pid)+" gw1.c-abc sh\n") {
		t.Fatalf("output %q does not name the command", out.String())
	}
}
