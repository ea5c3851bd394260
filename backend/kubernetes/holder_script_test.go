package kubernetes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The holder's scripts, run by this machine's shells (sh, and busybox's
// when present: the test cluster's pods run busybox) on real directories:
// the upload over tar and over cat, its refusal where the binary cannot run
// (a noexec mount) or be written (a read-only directory), and the listing.

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
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// fakeHolder is a tiny executable that answers "version" as the holder does.
func fakeHolder(t *testing.T) []byte {
	t.Helper()
	return []byte("#!/bin/sh\necho \"ran $*\"\n")
}

func TestHolderUploadScript(t *testing.T) {
	bin := fakeHolder(t)
	const hash = "0123456789abcdef"
	for name, sh := range shells(t) {
		for _, mode := range []string{"tar", "cat"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				dir := t.TempDir()
				in := bin
				if mode == "tar" {
					in = holderTar(bin, ".holder-"+hash+".x1")
				}
				out, code := runScript(t, sh, uploadScript, in, dir, hash, ".holder-"+hash+".x1", mode)
				if code != 0 {
					t.Fatalf("upload: status %d: %s", code, out)
				}
				home := filepath.Join(dir, ".termgate")
				fi, err := os.Stat(filepath.Join(home, "holder-"+hash))
				if err != nil || fi.Mode().Perm() != 0o700 {
					t.Fatalf("installed holder: %v %v", fi, err)
				}
				if di, _ := os.Stat(home); di.Mode().Perm() != 0o700 {
					t.Errorf(".termgate has mode %v, want 0700", di.Mode().Perm())
				}
				if ents, _ := os.ReadDir(home); len(ents) != 1 {
					t.Errorf(".termgate holds %v, want only the installed holder", ents)
				}
				// serveScript finds it and runs it with the socket there.
				out, code = runScript(t, sh, serveScript, nil, hash, "/nonexistent "+dir, "--session", "s1")
				if want := "ran serve --socket " + filepath.Join(home, "holder.sock") + " --session s1\n"; code != 0 || out != want {
					t.Errorf("serve script with the holder in place: status %d: %q", code, out)
				}
				out, code = runScript(t, sh, serveScript, nil, "fedcba9876543210", dir)
				if code != noHolder || !strings.HasPrefix(out, "termgate: no holder; ") {
					t.Errorf("serve script without this build's holder: status %d: %q", code, out)
				}
			})
		}
	}
}

func TestHolderUploadScriptRefusals(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a noexec tmpfs")
	}
	bin := fakeHolder(t)
	const hash = "0123456789abcdef"
	for name, sh := range shells(t) {
		t.Run(name+"/noexec", func(t *testing.T) {
			dir := t.TempDir()
			if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOEXEC, "size=4m"); err != nil {
				t.Skipf("mount a noexec tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
			out, code := runScript(t, sh, uploadScript, holderTar(bin, ".holder-x"), dir, hash, ".holder-x", "tar")
			if code != 4 || !strings.Contains(out, "noexec") {
				t.Errorf("upload into a noexec mount: status %d: %q", code, out)
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, ".termgate")); len(ents) != 0 {
				t.Errorf("the refused upload left %v", ents)
			}
		})
		t.Run(name+"/read-only", func(t *testing.T) {
			dir := t.TempDir()
			if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "size=4m"); err != nil {
				t.Skipf("mount a read-only tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
			for _, mode := range []string{"tar", "cat"} {
				in := bin
				if mode == "tar" {
					in = holderTar(bin, ".holder-x")
				}
				if out, code := runScript(t, sh, uploadScript, in, dir, hash, ".holder-x", mode); code != 3 {
					t.Errorf("%s upload into a read-only mount: status %d: %q", mode, code, out)
				}
			}
		})
	}
}

func TestHolderListScript(t *testing.T) {
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
		out, code := runScript(t, sh, listScript, nil, a+" "+b+" /nonexistent")
		if code != 0 || strings.TrimSpace(out) != b {
			t.Errorf("%s: list: status %d: %q, want %s", name, code, out, b)
		}
	}
}
