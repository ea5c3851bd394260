package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// TestInteractiveOnATerminal: on a terminal the toolbox prompts, runs
// each line as it comes (a continued line too), and exit ends it with its
// status.
func TestInteractiveOnATerminal(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	done := make(chan int, 1)
	go func() {
		defer tty.Close()
		done <- run(nil, tty, tty, tty)
	}()
	if _, err := io.WriteString(ptm, "echo $((6*7))\nif true; then\necho yes; fi\nexit 4\n"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	buf := make([]byte, 4096)
	for { // until the terminal is closed: the shell ended
		n, err := ptm.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if code := <-done; code != 4 {
		t.Fatalf("status %d, want 4; output %q", code, out.String())
	}
	for _, want := range []string{"termgate toolbox", "toolbox:", " 42\r\n", "> yes\r\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
}
