package exechost

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// launchScript, run by this machine's shells (dash or whatever /bin/sh
// is, and busybox's when present: the test images' only shell) on real
// directories: it runs a binary of the exec user's in a directory of the
// exec user's, and refuses (status 3, "cannot hold here") whatever another
// user planted: a directory, a file, a link (issue 18 H1).

func launchShells() map[string][]string {
	out := map[string][]string{"sh": {"/bin/sh"}}
	if _, err := os.Stat("/bin/dash"); err == nil {
		out["dash"] = []string{"/bin/dash"}
	}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		out["busybox"] = []string{"/bin/busybox", "sh"}
	}
	return out
}

// plant writes an executable script at p that leaves a marker next to it
// (proof that it ran) and prints "ran ARGS".
func plant(t *testing.T, p string) {
	t.Helper()
	script := "#!/bin/sh\n: >\"$(dirname \"$0\")/../RAN-$(basename \"$0\")\"\necho \"ran $*\"\n"
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
}

func runLaunch(t *testing.T, sh []string, dir, bin string) (string, int) {
	t.Helper()
	cmd := exec.Command(sh[0], append(sh[1:], "-c", launchScript, "termgate-holder", dir, bin, "version")...)
	out, err := cmd.CombinedOutput()
	return string(out), exitStatus(t, err)
}

func TestLaunchScriptRunsOnlyTheUsersOwnBinary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of another user's")
	}
	const other = 1000
	const bin = ".termgate/holder-0123456789abcdef"
	cases := []struct {
		name string
		make func(t *testing.T, dir string) // dir: the candidate directory
		runs bool
	}{
		{"own directory and binary", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, ".termgate"), 0o700, -1)
			plant(t, filepath.Join(dir, bin))
		}, true},
		{"directory of another user", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, ".termgate"), 0o700, other)
			plant(t, filepath.Join(dir, bin))
		}, false},
		{"binary of another user", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, ".termgate"), 0o700, -1)
			plant(t, filepath.Join(dir, bin))
			chown(t, filepath.Join(dir, bin), other)
		}, false},
		{"directory is a link to one of ours", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "real"), 0o700, -1)
			plant(t, filepath.Join(dir, "real", filepath.Base(bin)))
			symlink(t, "real", filepath.Join(dir, ".termgate"))
		}, false},
		{"binary is a link to one of ours", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, ".termgate"), 0o700, -1)
			plant(t, filepath.Join(dir, ".termgate", "real"))
			symlink(t, "real", filepath.Join(dir, bin))
		}, false},
		{"binary is a directory", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, ".termgate"), 0o700, -1)
			mkdir(t, filepath.Join(dir, bin), 0o700, -1)
		}, false},
		{"nothing there", func(t *testing.T, dir string) {}, false},
	}
	for shName, sh := range launchShells() {
		for _, c := range cases {
			t.Run(shName+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				c.make(t, dir)
				out, code := runLaunch(t, sh, dir, bin)
				ran := strings.Contains(out, "ran version")
				if ran != c.runs {
					t.Fatalf("ran %v, want %v: status %d: %q", ran, c.runs, code, out)
				}
				if !c.runs && (code != 3 || !strings.Contains(out, "cannot hold here")) {
					t.Errorf("refusal: status %d: %q, want status 3 and \"cannot hold here\"", code, out)
				}
				if m, _ := filepath.Glob(filepath.Join(dir, "RAN-*")); (len(m) > 0) != c.runs {
					t.Errorf("markers %v; the binary should run: %v", m, c.runs)
				}
			})
		}
	}
}

func mkdir(t *testing.T, p string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		chown(t, p, uid)
	}
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
