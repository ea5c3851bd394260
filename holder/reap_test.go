package holder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The subreaper changes the whole process (and kill then ends every
// descendant of it), so the test runs in a child process of its own:
// the test binary again, with subreaperChildEnv set.
const subreaperChildEnv = "TERMGATE_TEST_SUBREAPER_CHILD"

// TestSubreaperKeepsAndReapsDoubleForkedJobs: a held shell's job that
// double-forks, calls setsid and clears its environment is handed to the
// holder (not to PID 1), the shell's kill ends it, and the holder reaps
// it: no zombie is left below the holder.
func TestSubreaperKeepsAndReapsDoubleForkedJobs(t *testing.T) {
	if os.Getenv(subreaperChildEnv) == "1" {
		subreaperChild(t)
		return
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSubreaperKeepsAndReapsDoubleForkedJobs$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), subreaperChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func subreaperChild(t *testing.T) {
	stop, err := Subreap()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	self := os.Getpid()
	secs := strconv.Itoa(700000000 + self)
	cmd := exec.Command("/bin/sh", "-c", "(setsid env -i sleep "+secs+" &); sleep 1"+secs+" & wait")
	cmd.Env = append(os.Environ(), "TERMGATE_SESSION=reaptest")
	sh, err := startShell(cmd, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	orphan := 0
	for deadline := time.Now().Add(10 * time.Second); orphan == 0; {
		orphan = findArgs("sleep " + secs)
		if time.Now().After(deadline) {
			t.Fatal("the double-forked job never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Its parent (the subshell) exits at once: it becomes the holder's.
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, ok := statOf(orphan)
		if ok && st.ppid == self {
			break
		}
		if !ok || time.Now().After(deadline) {
			t.Fatalf("the double-forked job %d has parent %d, want the holder %d", orphan, st.ppid, self)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sh.kill()
	sh.wait()
	for deadline := time.Now().Add(10 * time.Second); ; {
		left := childrenOf(self)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left below the holder after its kill: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// findArgs returns the PID of a process whose command line is args.
func findArgs(args string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err == nil && strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") == args {
			pid, _ := strconv.Atoi(strings.TrimPrefix(d, "/proc/"))
			return pid
		}
	}
	return 0
}

// childrenOf lists the children of pid, zombies included, as PID/STATE.
func childrenOf(pid int) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		p, _ := strconv.Atoi(strings.TrimPrefix(d, "/proc/"))
		if st, ok := statOf(p); ok && st.ppid == pid {
			out = append(out, strconv.Itoa(p)+"/"+st.state)
		}
	}
	return out
}
