package holder

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 18 H1/H2: another user's directory, entry or listener is never the
// holder's.

const otherUID = 1000

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of another user's")
	}
}

func home(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), ".termgate")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func wantUntrusted(t *testing.T, err error, what string) {
	t.Helper()
	if u := (*Untrusted)(nil); !errors.As(err, &u) {
		t.Errorf("%s: %v, want an *Untrusted", what, err)
	}
}

func TestCheckHome(t *testing.T) {
	needRoot(t)
	if err := CheckHome(home(t)); err != nil {
		t.Fatalf("our own directory: %v", err)
	}
	d := home(t)
	if err := os.Chown(d, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	wantUntrusted(t, CheckHome(d), "another user's directory")

	d = home(t)
	if err := os.Chmod(d, 0o770); err != nil {
		t.Fatal(err)
	}
	wantUntrusted(t, CheckHome(d), "a group-writable directory")

	d = home(t)
	if err := os.WriteFile(filepath.Join(d, "holder.sock.log"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(filepath.Join(d, "holder.sock.log"), otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	wantUntrusted(t, CheckHome(d), "a directory holding another user's file")

	d = home(t)
	link := filepath.Join(filepath.Dir(d), "link")
	if err := os.Symlink(d, link); err != nil {
		t.Fatal(err)
	}
	wantUntrusted(t, CheckHome(link), "a link to our directory")

	// A parent others may rename entries in (a Kubernetes emptyDir /tmp):
	// allowed (see CheckHome).
	d = home(t)
	if err := os.Chmod(filepath.Dir(d), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := CheckHome(d); err != nil {
		t.Errorf("a directory in a world-writable parent: %v", err)
	}

	if err := MakeHome(filepath.Join(t.TempDir(), ".termgate")); err != nil {
		t.Errorf("MakeHome of a new directory: %v", err)
	}
}

// TestAttachRefusesAnotherUsersListener: a socket file that passes every
// file check (ours, in our directory) but whose listener is another
// user's process (bound before the directory became ours: what an old
// gateway's upload into a planted .termgate left) is refused before the
// gateway's stream reaches it.
func TestAttachRefusesAnotherUsersListener(t *testing.T) {
	needRoot(t)
	if os.Getenv("HOLDER_TEST_LISTEN") != "" {
		t.Skip("the helper process")
	}
	// The other user's listener: this test binary, run as uid 1000,
	// binding in a directory it may write.
	open := t.TempDir()
	if err := os.Chmod(filepath.Dir(open), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(open, "holder.sock")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(open, "helper")
	if err := os.WriteFile(helper, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helper, "-test.run=^TestHelperListen$")
	cmd.Env = append(os.Environ(), "HOLDER_TEST_LISTEN="+theirs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if listening(theirs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the helper did not listen")
		}
	}
	d := home(t)
	sock := filepath.Join(d, "holder.sock")
	if err := os.Rename(theirs, sock); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	in, inW, _ := os.Pipe()
	outR, out, _ := os.Pipe()
	defer in.Close()
	defer inW.Close()
	defer outR.Close()
	defer out.Close()
	// The first frame, as a gateway's hello would be.
	if _, err := inW.Write([]byte{TypeHello, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	err = Attach(sock, in, out, true)
	wantUntrusted(t, err, "another user's listener")
	if err != nil && !strings.Contains(err.Error(), "uid "+strconv.Itoa(otherUID)) {
		t.Errorf("the refusal does not name the listener's uid: %v", err)
	}
	err = Attach(sock, in, out, false)
	wantUntrusted(t, err, "another user's listener (copying attach)")
}

// TestHelperListen is the other user's listener of
// TestAttachRefusesAnotherUsersListener.
func TestHelperListen(t *testing.T) {
	p := os.Getenv("HOLDER_TEST_LISTEN")
	if p == "" {
		t.Skip("only as a helper process")
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("GOT-IT"))
		c.Close()
	}
}
