package docker

import (
	"bytes"
	"crypto/rand"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// halfCloseWait bounds each wait for an end to come through.
const halfCloseWait = 20 * time.Second

// TestDialPassesEachSidesEnd: a forwarded connection ends each direction
// on its own (half-close), whichever side ends first. The peer answers and
// ends its side (busybox nc shuts down its write side at its stdin's end)
// while the gateway's side is open: Read returns the answer and io.EOF,
// and what is written afterwards still reaches the peer. And the other
// way: the gateway half-closes first, the peer reads to EOF and answers
// (wc -c), and the answer is read in full. No tool is left running.
func TestDialPassesEachSidesEnd(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	dockerCLI(t, "exec", "-d", name, "sh", "-c", "echo hello | nc -l -p 7000 >/tmp/got")
	dockerCLI(t, "exec", "-d", name, "nc", "-l", "-p", "7001", "-e", "wc", "-c")
	b := plainBackend(t)
	inst := lookup(t, b, name)

	t.Run("the peer ends first", func(t *testing.T) {
		conn := dialRetry(t, b, inst, 7000)
		defer conn.Close()
		if got := readAllWithin(t, conn); got != "hello\n" {
			t.Fatalf("read %q, want the answer", got)
		}
		if _, err := io.WriteString(conn, "after the peer's end\n"); err != nil {
			t.Fatalf("write after the peer's end: %v", err)
		}
		if err := conn.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(halfCloseWait); ; time.Sleep(100 * time.Millisecond) { // polls the container: nothing to wait on
			got := dockerCLI(t, "exec", name, "cat", "/tmp/got")
			if got == "after the peer's end" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the peer received %q", got)
			}
		}
	})

	t.Run("the gateway ends first", func(t *testing.T) {
		conn := dialRetry(t, b, inst, 7001)
		defer conn.Close()
		data := make([]byte, 1<<20+3)
		_, _ = rand.Read(data)
		go func() {
			_, _ = conn.Write(data)
			_ = conn.CloseWrite()
		}()
		if got := strings.TrimSpace(readAllWithin(t, conn)); got != strconv.Itoa(len(data)) {
			t.Fatalf("the peer answered %q, want %d", got, len(data))
		}
	})

	for _, p := range procs(t, name) {
		if strings.Contains(p.Args, "holder-") {
			t.Fatalf("a tool is left running: %+v", p)
		}
	}
}

// dialRetry dials port in inst until its listener (started in the
// background) accepts.
func dialRetry(t *testing.T, b *Backend, inst sessions.Instance, port int) remote.Conn {
	t.Helper()
	var err error
	for range 50 {
		var conn remote.Conn
		if conn, err = b.Dial(testContext(t), inst, "127.0.0.1", port); err == nil {
			return conn
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("Dial port %d: %v", port, err)
	return nil
}

// readAllWithin reads conn to its EOF, which must come within
// halfCloseWait; conn is closed when it does not.
func readAllWithin(t *testing.T, conn remote.Conn) string {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(conn)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("read %d bytes, then %v", len(r.b), r.err)
		}
		return string(r.b)
	case <-time.After(halfCloseWait):
		_ = conn.Close()
		r := <-done
		t.Fatalf("no EOF within %v (read %q): the other side's end was not passed on", halfCloseWait, bytes.TrimSpace(r.b))
		return ""
	}
}
