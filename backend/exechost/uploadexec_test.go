package exechost

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// UploadByExec's and ExistsByExec's scripts, run by this machine's shells
// (sh, and busybox's when present: the Kubernetes test cluster's pods run
// busybox) on real directories: the upload over tar and over cat, its
// refusal where the binary cannot be written (a read-only directory), and
// the look-up. (Where the binary cannot run, a noexec mount, the start
// exec fails with 126: parseServe.)

func shells(t *testing.T) map[string][]string {
	out := map[string][]string{"sh": {"/bin/sh"}}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		out["busybox"] = []string{"/bin/busybox", "sh"}
	}
	return out
}

// runScript runs script with args in a shell, stdin from in.
func runScript(t *testing.T, sh []string, script string, in []byte, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(sh[0], append(append(sh[1:], "-c", script, "test"), args...)...)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	return string(out), exitStatus(t, err)
}

// exitStatus is a finished command's exit status; any other error fails
// the test.
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// fakeHolder is a tiny executable that answers "version" as the holder does.
func fakeHolder(t *testing.T) []byte {
	t.Helper()
	return []byte("#!/bin/sh\necho \"ran $*\"\n")
}

// onlyCat is a PATH without tar (the shell's tools, linked in), so that
// uploadScript takes the file over cat.
func onlyCat(t *testing.T) string {
	dir := t.TempDir()
	for _, tool := range []string{"mkdir", "cat", "chmod", "rm"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// upDir is the upload's fresh directory in the tests.
const upDir = ".termgate-upload-0123456789ab"

// runUpload runs uploadScript for dir/upDir/name as the gateway does:
// it reads the "ready MODE" line, then sends the file in that form.
func runUpload(t *testing.T, sh []string, path, dir, name string, bin []byte) (string, int) {
	t.Helper()
	cmd := exec.Command(sh[0], append(sh[1:], "-c", uploadScript, "test", filepath.Join(dir, upDir), name)...)
	cmd.Env = append(os.Environ(), "PATH="+path)
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	first, _ := r.ReadString('\n')
	switch {
	case strings.HasPrefix(first, "ready tar"):
		_, _ = in.Write(HolderTar(bin, upDir, name, 0, 0))
	case strings.HasPrefix(first, "ready cat"):
		_, _ = in.Write(bin)
	}
	in.Close()
	rest, _ := io.ReadAll(r)
	out := first + string(rest)
	err := cmd.Wait()
	return out, exitStatus(t, err)
}

func TestHolderUploadScript(t *testing.T) {
	bin := fakeHolder(t)
	const name = "holder"
	for shName, sh := range shells(t) {
		for mode, path := range map[string]string{"tar": os.Getenv("PATH"), "cat": onlyCat(t)} {
			t.Run(shName+"/"+mode, func(t *testing.T) {
				dir := t.TempDir()
				out, code := runUpload(t, sh, path, dir, name, bin)
				if mode == "cat" && shName == "busybox" && strings.HasPrefix(out, "ready tar") {
					t.Skip("this busybox finds its tar applet without PATH")
				}
				if code != 0 || !strings.HasPrefix(out, "ready "+mode) {
					t.Fatalf("upload: status %d: %s", code, out)
				}
				home := filepath.Join(dir, upDir)
				fi, err := os.Stat(filepath.Join(home, name))
				if err != nil || fi.Mode().Perm() != 0o700 {
					t.Fatalf("uploaded holder: %v %v", fi, err)
				}
				if got, _ := os.ReadFile(filepath.Join(home, name)); !bytes.Equal(got, bin) {
					t.Errorf("uploaded %q, want %q", got, bin)
				}
				if di, _ := os.Stat(home); di.Mode().Perm() != 0o700 {
					t.Errorf("the upload's directory has mode %v, want 0700", di.Mode().Perm())
				}
				if ents, _ := os.ReadDir(home); len(ents) != 1 {
					t.Errorf("the upload's directory holds %v, want only the upload", ents)
				}
			})
		}
	}
}

func TestHolderUploadScriptRefusals(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a read-only tmpfs")
	}
	bin := fakeHolder(t)
	for shName, sh := range shells(t) {
		t.Run(shName+"/read-only", func(t *testing.T) {
			dir := t.TempDir()
			if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "size=4m"); err != nil {
				t.Skipf("mount a read-only tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
			for mode, path := range map[string]string{"tar": os.Getenv("PATH"), "cat": onlyCat(t)} {
				if out, code := runUpload(t, sh, path, dir, ".holder-x", bin); code != 3 {
					t.Errorf("%s upload into a read-only mount: status %d: %q", mode, code, out)
				}
			}
		})
	}
}

// An upload never goes into a directory that exists already: one another
// user of the instance made (to plant a file next to the holder, or to
// keep a handle on what is written there) is refused, not taken over
// (issue 18 H1; today's `mkdir -p` took it).
func TestHolderUploadScriptRefusesAnExistingDirectory(t *testing.T) {
	bin := fakeHolder(t)
	for shName, sh := range shells(t) {
		for mode, path := range map[string]string{"tar": os.Getenv("PATH"), "cat": onlyCat(t)} {
			t.Run(shName+"/"+mode, func(t *testing.T) {
				dir := t.TempDir()
				planted := filepath.Join(dir, upDir)
				if err := os.Mkdir(planted, 0o777); err != nil {
					t.Fatal(err)
				}
				if out, code := runUpload(t, sh, path, dir, "holder", bin); code != 3 {
					t.Errorf("upload into an existing directory: status %d: %q", code, out)
				}
				if ents, _ := os.ReadDir(planted); len(ents) != 0 {
					t.Errorf("the planted directory got %v", ents)
				}
			})
		}
	}
}

func TestHolderExistsScript(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(b, ".termgate"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A socket file, as a listening holder leaves it.
	sock := filepath.Join(b, ".termgate", "holder.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	for name, sh := range shells(t) {
		out, code := runScript(t, sh, existsScript, nil, filepath.Join(a, ".termgate", "holder.sock"), sock, "/nonexistent")
		if got := strings.Fields(out); code != 0 || strings.Join(got, " ") != "0 1 0" {
			t.Errorf("%s: exists: status %d: %q, want 0 1 0", name, code, out)
		}
	}
}

// UploadByExec and ExistsByExec over a push-style Executor running this
// machine's sh (localPush).
func TestUploadAndExistsByExec(t *testing.T) {
	ctx := context.Background()
	inst := sessions.Instance{Name: "local", ID: "local"}
	dir := t.TempDir()
	home := filepath.Join(dir, upDir)
	bin := fakeHolder(t)
	x := newLocalPush(t)
	if err := UploadByExec(ctx, x, inst, home, "holder", bin); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(home, "holder")); !bytes.Equal(got, bin) {
		t.Errorf("uploaded %q, want %q", got, bin)
	}
	err := UploadByExec(ctx, x, inst, home, "again", bin)
	if !errors.Is(err, ErrRefused) {
		t.Errorf("upload into an existing directory: %v, want ErrRefused", err)
	}
	have, err := ExistsByExec(ctx, x, inst, []string{filepath.Join(home, "holder"), filepath.Join(home, "nothing")}, nil)
	if err != nil || len(have) != 2 || !have[0] || have[1] {
		t.Errorf("ExistsByExec = %v, %v; want [true false]", have, err)
	}
}
