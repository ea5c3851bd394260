package sshd

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// goroutinesBackTo waits, bounded, for the goroutine count to fall back to
// base (plus slack for the runtime's own).
func goroutinesBackTo(t *testing.T, base int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := runtime.NumGoroutine()
		if n <= base+2 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines %v later, %d before:\n%s", n, within, base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// idleSessionBase starts instance's session with a client that then
// detaches, and returns the goroutine count with the session idle.
func idleSessionBase(t *testing.T, f *fixture, instance string) int {
	t.Helper()
	tm := f.attach(t, "admin", instance, 80, 24)
	tm.pid()
	_ = tm.client.Close()
	eventually(t, "the first client to detach", func() bool { return clientsOf(f.reg, instance) == 0 })
	time.Sleep(200 * time.Millisecond) // goroutines of the detach finish

	return runtime.NumGoroutine()
}

// TestInputToShellNotReading is issue 9 item 4 over SSH: typing into a
// shell that does not read its input tells the user once, keeps the
// channel read, and a connection that then dies is detached at once with
// everything it held released.
func TestInputToShellNotReading(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) { c.InputTimeout = time.Second })
	base := idleSessionBase(t, f, "web1")
	tm := f.attach(t, "admin", "web1", 80, 24)
	tm.pid()
	tm.send("stty raw -echo; echo sle''eping; sleep 1000")
	tm.expect("sleeping")
	chunk := bytes.Repeat([]byte("k"), 16<<10)
	typed := make(chan error, 1)
	go func() {
		// 4 MiB: more than the channel's window and every buffer on the
		// way; it all goes through only if the gateway keeps reading.
		for range 256 {
			if _, err := tm.stdin.Write(chunk); err != nil {
				typed <- err
				return
			}
		}
		typed <- nil
	}()
	select {
	case err := <-typed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatalf("4 MiB of input did not go through in %v: the gateway stopped reading the channel; stderr %q", waitFor, tm.errOut.String())
	}
	const notice = "[termgate] the shell is not reading its input; input dropped"
	m, _ := tm.errOut.waitFor(regexp.MustCompile(regexp.QuoteMeta(notice)), 0)
	if m == nil {
		t.Fatalf("no notice on stderr: %q", tm.errOut.String())
	}
	if n := strings.Count(tm.errOut.String(), notice); n != 1 {
		t.Errorf("the notice came %d times, want once", n)
	}
	if clientsOf(f.reg, "web1") != 1 {
		t.Fatal("the client is no longer attached")
	}
	// The connection dies (no goodbye): the client is detached and its
	// goroutines end, whatever the shell does.
	_ = tm.client.Close()
	eventually(t, "the dead connection to be detached", func() bool { return clientsOf(f.reg, "web1") == 0 })
	goroutinesBackTo(t, base, 10*time.Second)
}

// TestSlowClientThatNeverReadsIsCutOff is issue 10 item 3 over SSH: a
// client that stops reading while the shell prints is dropped as too slow;
// it then loses its connection and every goroutine within seconds (the
// notice cannot be delivered to it), and others are not affected.
func TestSlowClientThatNeverReadsIsCutOff(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) { c.ClientQueue = 1 << 20 })
	base := idleSessionBase(t, f, "web1")

	c := f.dial(t, "admin", "web1")
	ch, reqs, err := c.OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	go gossh.DiscardRequests(reqs)
	pty := gossh.Marshal(struct {
		Term             string
		Cols, Rows, W, H uint32
		Modes            string
	}{"xterm", 80, 24, 0, 0, ""})
	if ok, err := ch.SendRequest("pty-req", true, pty); !ok || err != nil {
		t.Fatalf("pty-req: %v %v", ok, err)
	}
	if ok, err := ch.SendRequest("shell", true, nil); !ok || err != nil {
		t.Fatalf("shell: %v %v", ok, err)
	}
	// The shell prints flat out; this client never reads a byte.
	if _, err := ch.Write([]byte("yes flood-flood-flood\r")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = c.Wait()
	}()
	select {
	case <-closed:
	case <-time.After(waitFor):
		t.Fatalf("a client that never reads still has its connection %v later", waitFor)
	}
	if !strings.Contains(f.logs.String(), "the client takes no output; closing the connection") {
		t.Error("the log does not say why the connection was closed")
	}
	goroutinesBackTo(t, base, 10*time.Second)
	// The session still works for a client that reads (after the flood).
	tm := f.attach(t, "admin", "web1", 80, 24)
	tm.send("\x03")
	tm.send("echo alive-$((2+3))")
	tm.expect("alive-5")
}

// TestSlowClientGetsTheNoticeWhenItReadsAgain: a client dropped as too
// slow that reads again within the grace gets the notice and exit status 1.
func TestSlowClientGetsTheNoticeWhenItReadsAgain(t *testing.T) {
	f := newFixtureReg(t, func(c *Config) { c.CloseGrace = 5 * time.Second },
		func(c *sessions.Config) { c.ClientQueue = 1 << 20 })
	c := f.dial(t, "admin", "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := s.StdoutPipe() // unread until the client is dropped
	if err != nil {
		t.Fatal(err)
	}
	stderr := newStream()
	s.Stderr = stderr
	stdin, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("yes flood-flood-flood\r")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the client to be dropped as too slow", func() bool {
		return strings.Contains(f.logs.String(), "client dropped")
	})
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	const notice = "[termgate] client fell too far behind"
	if m, _ := stderr.waitFor(regexp.MustCompile(regexp.QuoteMeta(notice)), 0); m == nil {
		t.Fatalf("no notice on stderr: %q", stderr.String())
	}
	if code := termtest.ExitStatus(t, s.Wait()); code != 1 {
		t.Fatalf("exit status %d, want 1", code)
	}
	// Stop the flood.
	tm := f.attach(t, "admin", "web1", 80, 24)
	tm.send("\x03")
	tm.send("echo alive-$((2+3))")
	tm.expect("alive-5")
}

// TestInputFlowsAgainAfterAStall: once a shell that took no input reads
// again, what the client types reaches it again (the chunk offered during
// the stall ends it), in order, with no second notice.
func TestInputFlowsAgainAfterAStall(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) { c.InputTimeout = time.Second })
	tm := f.attach(t, "admin", "web1", 80, 24)
	tm.send("stty raw -echo; echo sle''eping; sleep 4; echo rea''ding; exec cat")
	tm.expect("sleeping")
	chunk := bytes.Repeat([]byte("k"), 16<<10)
	for range 128 { // 2 MiB: the shell's buffers fill and the write stalls
		if _, err := tm.stdin.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	const notice = "[termgate] the shell is not reading its input; input dropped"
	if m, _ := tm.errOut.waitFor(regexp.MustCompile(regexp.QuoteMeta(notice)), 0); m == nil {
		t.Fatalf("no notice on stderr: %q", tm.errOut.String())
	}
	tm.expect("reading")
	deadline := time.Now().Add(waitFor)
	for i := 0; ; i++ {
		if _, err := io.WriteString(tm.stdin, fmt.Sprintf("<mark%d>", i)); err != nil {
			t.Fatal(err)
		}
		if m, at := tm.out.WaitFor(regexp.MustCompile(fmt.Sprintf(`<mark%d>`, i)), tm.seen, 300*time.Millisecond); m != nil {
			tm.seen = at
			// cat echoes what it reads: marks arrive in the order typed
			// (one may be lost in the stall, none after it ended).
			time.Sleep(300 * time.Millisecond)
			for j := i + 1; j <= i+3; j++ {
				if _, err := io.WriteString(tm.stdin, fmt.Sprintf("<mark%d>", j)); err != nil {
					t.Fatal(err)
				}
			}
			tm.expect(fmt.Sprintf("<mark%d><mark%d><mark%d>", i+1, i+2, i+3))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("typed input never reached the shell again; stderr %q", tm.errOut.String())
		}
	}
	if n := strings.Count(tm.errOut.String(), notice); n != 1 {
		t.Errorf("the notice came %d times, want once", n)
	}
}
