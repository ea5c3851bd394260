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

// startMarked starts sh -c script in dir with the session marker, and
// kills it at the test's end.
func startMarked(t *testing.T, dir, marker, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERMGATE_SESSION="+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestSessionCwdFindsTheShell: the oldest marked process whose parent is
// not marked is the shell; its job (marked, in another directory, whose
// parent is the shell) is not chosen, nor is another session's shell.
func TestSessionCwdFindsTheShell(t *testing.T) {
	shellDir, jobDir, otherDir := t.TempDir(), t.TempDir(), t.TempDir()
	id := "cwdtest" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	// The shell starts a job in another directory, and waits.
	startMarked(t, shellDir, "gw1."+id, "cd "+jobDir+" && sleep 60 & cd "+shellDir+"; wait")
	startMarked(t, otherDir, id+"x", "sleep 60")
	var got string
	var err error
	for range 100 { // until the job runs in its directory
		got, err = SessionCwd(id)
		if err == nil && got == shellDir && jobRunning(t, id, jobDir) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || got != shellDir {
		t.Fatalf("SessionCwd = %q, %v; want the shell's %s (not the job's %s)", got, err, shellDir, jobDir)
	}
	if _, err := SessionCwd("nosuch" + id); err == nil {
		t.Fatal("SessionCwd of a session with no shell found one")
	}
	for _, bad := range []string{"", "a/b", "a.b", "a\x00b"} {
		if _, err := SessionCwd(bad); err == nil {
			t.Fatalf("SessionCwd(%q) found a shell", bad)
		}
	}
}

// jobRunning reports whether a process of the marker runs in dir.
func jobRunning(t *testing.T, id, dir string) bool {
	ms, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, m := range ms {
		if cwd, err := os.Readlink(m); err == nil && cwd == dir && hasMarker(filepath.Join(filepath.Dir(m), "environ"), id, new(int)) {
			return true
		}
	}
	return false
}

// TestCheckCwd: only an absolute, existing directory.
func TestCheckCwd(t *testing.T) {
	d := t.TempDir()
	f := filepath.Join(d, "f")
	_ = os.WriteFile(f, nil, 0o600)
	for _, c := range []struct {
		in string
		ok bool
	}{{d, true}, {"rel", false}, {f, false}, {d + " (deleted)", false}, {"/a\x00b", false}} {
		if _, err := checkCwd(c.in); (err == nil) != c.ok {
			t.Errorf("checkCwd(%q): %v", c.in, err)
		}
	}
}

// TestSessionCwdSkipsJobs: in a /proc made up for it, a marked process
// whose parent is marked is never the shell, even when it reads as older
// (a reused PID); a process reading a huge environment is bounded.
func TestSessionCwdSkipsJobs(t *testing.T) {
	proc, shellDir, jobDir := t.TempDir(), t.TempDir(), t.TempDir()
	mk := func(pid, ppid, start string, env []byte, cwd string) {
		d := filepath.Join(proc, pid)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		stat := pid + " (a) b) S " + ppid + " 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " + start + " 0 0\n"
		_ = os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o600)
		_ = os.WriteFile(filepath.Join(d, "environ"), env, 0o600)
		_ = os.Symlink(cwd, filepath.Join(d, "cwd"))
	}
	marked := []byte("A=1\x00TERMGATE_SESSION=gw.s1\x00")
	mk("10", "1", "500", marked, shellDir)
	mk("11", "10", "100", marked, jobDir)
	// Past maxEnvironRead: not seen, though older still.
	mk("12", "1", "50", append(make([]byte, maxEnvironRead), marked...), jobDir)
	got, err := sessionCwdIn(proc, "s1")
	if err != nil || got != shellDir {
		t.Fatalf("sessionCwdIn = %q, %v; want the shell's %s", got, err, shellDir)
	}
}

// TestSessionCwdScansAllOfAFullProc: on a host with more processes than
// one directory read returns (a test suite's load: the local backend
// scans the host's /proc), the shell is found wherever /proc lists it.
// The scan stopped at 4096 entries, and SFTP started in the home
// directory (newcomer round 4, TestSFTPStartsInTheSessionsDirectory).
func TestSessionCwdScansAllOfAFullProc(t *testing.T) {
	proc, shellDir := t.TempDir(), t.TempDir()
	for i := range 6000 { // processes of nobody's session
		if err := os.Mkdir(filepath.Join(proc, strconv.Itoa(1000+i)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Twenty shells, each at some place of the listing (a directory's
	// order is the file system's): each must be found.
	for i := range 20 {
		pid := strconv.Itoa(100000 + i)
		d := filepath.Join(proc, pid)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		stat := pid + " (sh) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 500 0 0\n"
		_ = os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o600)
		_ = os.WriteFile(filepath.Join(d, "environ"), []byte("A=1\x00TERMGATE_SESSION=gw.s"+pid+"\x00"), 0o600)
		_ = os.Symlink(shellDir, filepath.Join(d, "cwd"))
	}
	for i := range 20 {
		id := "s" + strconv.Itoa(100000+i)
		if got, err := sessionCwdIn(proc, id); err != nil || got != shellDir {
			t.Fatalf("session %s among 6,020 entries: %q, %v; want %s", id, got, err, shellDir)
		}
	}
}
