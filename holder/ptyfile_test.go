package holder

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The shell's terminal stays on the runtime's poller, across resizes too
// (creack/pty's Setsize would make it blocking through File.Fd): a read
// of it then parks a goroutine instead of holding a thread, which the
// durable path's echo latency paid for. Deadlines work only on such a
// file, so a read with one returns when it passes.
func TestTerminalStaysOnThePollerAcrossResizes(t *testing.T) {
	sh, err := startShell(exec.Command("/bin/sh"), 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sh.kill()
		sh.wait()
	})
	if err := sh.resize(100, 30); err != nil {
		t.Fatal(err)
	}
	// Take what the shell printed, then read with nothing to come.
	buf := make([]byte, 4096)
	for {
		if err := sh.pty.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
			t.Fatalf("the terminal takes no deadline (%v): it is in blocking mode", err)
		}
		_, err := sh.pty.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !sh.nonblock {
		t.Fatal("the shell's terminal is not marked non-blocking")
	}
}
