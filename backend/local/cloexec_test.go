package local

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// startBash starts an interactive bash as instance name.
func startBash(t *testing.T, b *Backend, name string) *process {
	t.Helper()
	inst, err := b.Lookup(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Start(context.Background(), inst, sessions.StartSpec{SessionID: name, Shell: []string{"bash", "--noprofile", "--norc", "-i"}, Term: "xterm", Size: sessions.Size{Cols: 100, Rows: 30}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(context.Background()) })
	return p.(*process)
}

// TestShellHoldsNoOtherSessionsTerminal is issue 9 item 0: a shell must not
// inherit the terminal masters of the sessions started before it, or it can
// type into them.
func TestShellHoldsNoOtherSessionsTerminal(t *testing.T) {
	b := New(Config{})
	a := startBash(t, b, "a")
	io.WriteString(a, "echo A-$((1+1))-READY\n")
	readUntil(t, a, regexp.MustCompile(`A-2-READY`))
	victim := startBash(t, b, "b") // started second: it would inherit a's master

	// What the second shell holds, as `ls -l /proc/$$/fd` shows it.
	dir := "/proc/" + strconv.Itoa(victim.cmd.Process.Pid) + "/fd"
	own, err := os.Readlink(dir + "/0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(own, "/dev/pts/") {
		t.Fatalf("shell's stdin is %s, want its terminal /dev/pts/N", own)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		if target == "/dev/ptmx" || strings.HasPrefix(target, "/dev/pts/") && target != own {
			t.Errorf("the second shell holds descriptor %s -> %s (its own terminal is %s)", e.Name(), target, own)
		}
	}

	// The attack as a user tries it: write a command into every descriptor
	// above 2; none may reach the first shell.
	marker := filepath.Join(t.TempDir(), "INJECTED")
	io.WriteString(victim, `for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && [ "$n" -ne 255 ] && eval "echo 'touch `+marker+`' >&$n" 2>/dev/null; done; echo B-$((1+1))-DONE`+"\n")
	readUntil(t, victim, regexp.MustCompile(`B-2-DONE`))
	// Anything injected into a's terminal was queued before this line.
	io.WriteString(a, "echo A-$((1+1))-DONE\n")
	readUntil(t, a, regexp.MustCompile(`A-2-DONE`))
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second shell typed a command into the first one's terminal (%s exists: %v)", marker, err)
	}
}
