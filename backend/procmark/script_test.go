package procmark

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// KillScript run for real on this machine's /proc, by every shell it must
// work with. Each test marks its processes with a marker of its own and
// starts them in sessions of their own (setsid), so that the script can
// reach nothing else: it spares its own session, which is the test's.
// Never --all, --prefix or --orphans here: they would reach every marked
// process on the machine, other tests' included (backend/docker runs them
// in containers).

// shells are the sh implementations KillScript runs under in instances.
func shells(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, argv := range map[string][]string{"dash": {"dash"}, "busybox": {"busybox", "sh"}, "bash": {"bash"}} {
		if _, err := exec.LookPath(argv[0]); err == nil {
			out[name] = argv
		}
	}
	if len(out) == 0 {
		t.Skip("no dash, busybox or bash here")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	return out
}

func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "t" + hex.EncodeToString(b)
}

// runScript runs KillScript with args under sh and returns what it ended.
func runScript(t *testing.T, sh []string, args ...string) []Ended {
	t.Helper()
	argv := append(append(sh[1:len(sh):len(sh)], "-c", KillScript, "termgate-kill"), args...)
	out, err := exec.Command(sh[0], argv...).Output()
	if err != nil {
		t.Fatalf("%v kill script: %v (%s)", sh, err, out)
	}
	return ParseEnded(string(out))
}

// spawn starts argv in a session of its own with env added to this
// process's environment, and reaps it at cleanup.
func spawn(t *testing.T, env []string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// sleepers returns the live (not zombie) processes running "sleep SECS",
// by SECS, for the given SECS.
func sleepers(secs ...string) map[string]int {
	found := map[string]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cl, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cl), "\x00"), "\x00")
		if len(args) != 2 {
			continue
		}
		st, _ := os.ReadFile(d + "/stat")
		if i := strings.LastIndexByte(string(st), ')'); i < 0 || strings.HasPrefix(strings.TrimSpace(string(st[i+1:])), "Z") {
			continue
		}
		for _, s := range secs {
			if args[1] == s {
				pid, _ := strconv.Atoi(strings.TrimPrefix(d, "/proc/"))
				found[s] = pid
			}
		}
	}
	return found
}

func waitSleepers(t *testing.T, secs ...string) map[string]int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := sleepers(secs...)
		if len(got) == len(secs) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %v of sleeps %v started", got, secs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// secsFor returns n distinct sleep durations no other test uses.
func secsFor(n int) []string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	base := 100000 + int(b[0])<<16 | int(b[1])<<8 | int(b[2])
	var out []string
	for i := range n {
		out = append(out, strconv.Itoa(base*10+i))
	}
	return out
}

// TestKillScriptEndsDescendantsThatShedTheMarker is the red team's L1 in an
// ordinary session: jobs that leave the shell's session and clear their
// environment, or forge TERMGATE_HELD=1, are still below the shell, and
// go with it; so does one whose command name poses as a zombie child of
// PID 1 in another session.
func TestKillScriptEndsDescendantsThatShedTheMarker(t *testing.T) {
	for name, sh := range shells(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := token(t)
			s := secsFor(5)
			hostile := filepath.Join(t.TempDir(), "x) Z 1 1 1 1")
			if err := os.Symlink(mustLook(t, "sleep"), hostile); err != nil {
				t.Fatal(err)
			}
			spawn(t, []string{EnvSession + "=" + marker, "L=" + hostile}, "sh", "-c",
				"env TERMGATE_HELD=1 setsid sleep "+s[0]+" & setsid env -i sleep "+s[1]+" & env -i sleep "+s[2]+
					" & setsid sleep "+s[3]+` & setsid env -i "$L" `+s[4]+" & wait")
			pids := waitSleepers(t, s...)
			ended := runScript(t, sh, HolderDirArg(t.TempDir()), marker)
			if left := sleepers(s...); len(left) > 0 {
				t.Fatalf("left after the kill script: %v (it ended %+v)", left, ended)
			}
			got := map[int]bool{}
			for _, e := range ended {
				got[e.PID] = true
			}
			for secs, pid := range pids {
				if !got[pid] {
					t.Errorf("sleep %s (pid %d) not reported in %+v", secs, pid, ended)
				}
			}
		})
	}
}

func mustLook(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("no %s here", prog)
	}
	p, err = filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKillScriptHonoursHeldOnlyBelowAHolder: TERMGATE_HELD=1 spares a
// process only below a live holder (an ancestor running a holder-* of a
// trusted .termgate); set by hand, or below a holder whose directory
// others can write, it spares nothing.
func TestKillScriptHonoursHeldOnlyBelowAHolder(t *testing.T) {
	for name, sh := range shells(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := token(t)
			dir := t.TempDir()
			home := filepath.Join(dir, ".termgate")
			if err := os.Mkdir(home, 0o700); err != nil {
				t.Fatal(err)
			}
			// A copy of a shell plays the holder: the script knows a
			// holder by its executable, not by what it does.
			bin := filepath.Join(home, "holder-test")
			// Copied by cp, not written from this process: a write
			// descriptor of ours, inherited by a fork of a parallel
			// subtest until its exec, made the exec below fail with
			// ETXTBSY ("text file busy") once in CI.
			if out, err := exec.Command("cp", mustLook(t, "dash"), bin).CombinedOutput(); err != nil {
				t.Fatalf("cp dash: %v: %s", err, out)
			}
			s := secsFor(3)
			held := []string{"TERMGATE_HELD=1", EnvSession + "=" + marker}
			spawn(t, nil, bin, "-c", "env TERMGATE_HELD=1 "+EnvSession+"="+marker+" sleep "+s[0]+" & wait")
			spawn(t, held, "sleep", s[1]) // forged: no holder above
			spawn(t, held, "sleep", s[2])
			waitSleepers(t, s...)

			runScript(t, sh, HolderDirArg(dir), marker)
			left := sleepers(s...)
			if _, ok := left[s[0]]; !ok {
				t.Fatalf("the job below the holder was killed (left: %v)", left)
			}
			if len(left) != 1 {
				t.Fatalf("self-marked held processes survived: %v", left)
			}

			// A holder directory others can write proves nothing.
			if err := os.Chmod(home, 0o777); err != nil {
				t.Fatal(err)
			}
			runScript(t, sh, HolderDirArg(dir), marker)
			if left := sleepers(s[0]); len(left) != 0 {
				t.Fatalf("a holder in a directory others can write was trusted: %v left", left)
			}
		})
	}
}

// TestKillScriptEndsJobsHoldingTheTerminal: setsid forks when its caller
// leads a process group (every job of an interactive shell), so the
// red team's `setsid env -i sleep 8888 &` is PID 1's child with no
// marker; it still holds the session's terminal, and goes with it.
func TestKillScriptEndsJobsHoldingTheTerminal(t *testing.T) {
	for name, sh := range shells(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := token(t)
			s := secsFor(1)
			cmd := exec.Command("sh", "-c", "setsid -f env -i sleep "+s[0]+"; exec sleep 1"+s[0])
			cmd.Env = append(os.Environ(), EnvSession+"="+marker)
			f, err := pty.Start(cmd) // the shell leads a session with the terminal as its own
			if err != nil {
				t.Skip("no pseudo-terminal here:", err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				_ = f.Close()
			})
			go func() { _, _ = io.Copy(io.Discard, f) }()
			pids := waitSleepers(t, s[0])
			if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pids[s[0]]) + "/stat"); strings.Contains(string(st), " "+strconv.Itoa(cmd.Process.Pid)+" ") {
				t.Fatalf("setsid -f did not fork: %s", st)
			}
			ended := runScript(t, sh, marker)
			if left := sleepers(s[0]); len(left) > 0 {
				t.Fatalf("the job holding the terminal survived: %v (ended %+v)", left, ended)
			}
		})
	}
}
