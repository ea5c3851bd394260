package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

func runLocal(t *testing.T, b *Backend, rc remote.Command) remote.Process {
	t.Helper()
	inst, err := b.Lookup(context.Background(), "web1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Run(context.Background(), inst, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func waitExitOf(t *testing.T, p remote.Process) remote.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRunPipes: stdout and stderr apart, the exit code, stdin byte-exact
// to its EOF (CloseWrite), and the environment passed on.
func TestRunPipes(t *testing.T) {
	b := New(Config{Dir: t.TempDir()})
	defer b.Close()
	var stderr bytes.Buffer
	p := runLocal(t, b, remote.Command{Line: `echo out $LANG; echo err >&2; exit 3`, Env: []string{"LANG=C.UTF-8"}, Stderr: &stderr})
	out, err := io.ReadAll(p)
	if err != nil || string(out) != "out C.UTF-8\n" {
		t.Fatalf("stdout %q, %v", out, err)
	}
	if e := waitExitOf(t, p); e.Code != 3 || e.Signal != "" {
		t.Fatalf("exit %+v, want code 3", e)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if stderr.String() != "err\n" { // Close waited for the stderr copy
		t.Fatalf("stderr %q", stderr.String())
	}

	data := bytes.Repeat([]byte("abc\x00\xff\n"), 512<<10) // 3 MiB
	p = runLocal(t, b, remote.Command{Line: "cat"})
	go func() {
		_, _ = p.Write(data)
		_ = p.CloseWrite()
	}()
	got, err := io.ReadAll(p)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("cat: %d bytes back of %d, %v", len(got), len(data), err)
	}
	if e := waitExitOf(t, p); e.Code != 0 {
		t.Fatalf("cat exit %+v", e)
	}
}

// TestRunSignal: a process killed by a signal says which.
func TestRunSignal(t *testing.T) {
	b := New(Config{Dir: t.TempDir()})
	defer b.Close()
	p := runLocal(t, b, remote.Command{Line: `kill -TERM $$`})
	_, _ = io.ReadAll(p)
	if e := waitExitOf(t, p); e.Signal != "TERM" || e.Code != 128+15 {
		t.Fatalf("exit %+v, want TERM", e)
	}
}

// TestRunTTY: a terminal of the asked size and TERM, resizable.
func TestRunTTY(t *testing.T) {
	b := New(Config{Dir: t.TempDir()})
	defer b.Close()
	p := runLocal(t, b, remote.Command{Line: `tty; echo $TERM; stty size; read x; stty size`, TTY: true, Term: "vt100", Size: sessions.Size{Cols: 91, Rows: 17}})
	buf := make([]byte, 4096)
	var out strings.Builder
	for !strings.Contains(out.String(), "17 91") {
		n, err := p.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			t.Fatalf("read: %v; output %q", err, out.String())
		}
	}
	if !strings.Contains(out.String(), "/dev/pts/") || !strings.Contains(out.String(), "vt100") {
		t.Fatalf("output %q", out.String())
	}
	if err := p.Resize(context.Background(), sessions.Size{Cols: 100, Rows: 30}); err != nil {
		t.Fatal(err)
	}
	_, _ = p.Write([]byte("\n"))
	rest, _ := io.ReadAll(p)
	if !strings.Contains(string(rest), "30 100") {
		t.Fatalf("after resize %q", rest)
	}
	if e := waitExitOf(t, p); e.Code != 0 {
		t.Fatalf("exit %+v", e)
	}
}

// TestRunCloseKillsAll: Close ends the command and the jobs it started,
// setsid ones included, while it runs and after it exited.
func TestRunCloseKillsAll(t *testing.T) {
	b := New(Config{Dir: t.TempDir()})
	defer b.Close()
	for _, line := range []string{`sleep 1000 & sleep 1000 & echo $$; wait`, `sleep 1000 >/dev/null 2>&1 & echo $$`} {
		p := runLocal(t, b, remote.Command{Line: line})
		buf := make([]byte, 64)
		n, err := p.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		sid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
		if err != nil {
			t.Fatalf("pid %q", buf[:n])
		}
		start := time.Now()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Close took %v", d)
		}
		if left := liveInSessions(t, []int{sid}); len(left) > 0 {
			t.Fatalf("%q: left running: %v", line, left)
		}
		if _, err := p.Read(buf); err != io.EOF {
			t.Fatalf("read after Close: %v", err)
		}
	}
}
