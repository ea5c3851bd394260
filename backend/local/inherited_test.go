//go:build linux

package local

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShellInheritsNoDescriptorOfTheGateway: a descriptor the gateway
// inherited without close-on-exec (from whoever started it) does not
// reach the shells: they could write into it, and writing into a pipe
// nobody reads kills them with SIGPIPE.
func TestShellInheritsNoDescriptorOfTheGateway(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], 0); err != nil { // deliberately not close-on-exec
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var st unix.Stat_t
	if err := unix.Fstat(p[1], &st); err != nil {
		t.Fatal(err)
	}
	leaked := "pipe:[" + strconv.FormatUint(st.Ino, 10) + "]"

	sh := startBash(t, New(Config{}), "inherit")
	dir := "/proc/" + strconv.Itoa(sh.cmd.Process.Pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if target, _ := os.Readlink(dir + "/" + e.Name()); target == leaked {
			t.Fatalf("the shell holds the gateway's inherited descriptor %s -> %s", e.Name(), target)
		}
	}
}
