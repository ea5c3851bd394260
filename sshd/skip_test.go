package sshd

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/screen"
	"github.com/termgate/termgate/sessions"
)

// screenReplay is --replay screen with a small client queue (the
// gateway's is 16 MiB), so that a skip comes soon.
func screenReplay(queue int, stuck time.Duration) func(*sessions.Config) {
	return func(c *sessions.Config) {
		c.NewReplayer = screen.NewReplayerFunc(screen.Options{})
		c.ClientQueue = queue
		c.StuckTimeout = stuck
	}
}

// attachUnread opens a shell whose output the client does not read until
// resume is called: its channel's window fills and the gateway's writes
// block, as with a client that stops reading its socket.
func (f *fixture) attachUnread(t *testing.T, key, user string) (tm *term, resume func()) {
	t.Helper()
	c := f.dial(t, key, user)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	tm = &term{t: t, client: c, sess: s, out: newStream(), errOut: newStream(), done: make(chan error, 1)}
	s.Stdout, s.Stderr = pw, tm.errOut
	if tm.stdin, err = s.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() { tm.done <- s.Wait() }()
	copied := make(chan struct{})
	resumed := false
	resume = func() {
		resumed = true
		go func() {
			defer close(copied)
			_, _ = io.Copy(tm.out, pr)
		}()
	}
	t.Cleanup(func() {
		_ = s.Close()
		_ = c.Close()
		_ = pr.Close()
		if resumed {
			<-copied
		}
	})
	return tm, resume
}

// waitOutput waits until the instance's session has produced n bytes.
func waitOutput(t *testing.T, reg *sessions.Registry, instance string, n int64) {
	t.Helper()
	eventually(t, "the output", func() bool {
		for _, in := range reg.Sessions() {
			if in.Instance == instance && in.BytesOut >= n {
				return true
			}
		}
		return false
	})
}

// Contract, session semantics 8 over SSH: a client that stops reading
// while 30 MB are printed stays attached; when it reads again it gets the
// redraw of the current screen, then a one-line [termgate] notice, and
// its input still reaches the shell.
func TestSSHClientThatFellBehindIsBroughtForward(t *testing.T) {
	f := newFixtureReg(t, nil, screenReplay(2<<20, 0))
	tm, resume := f.attachUnread(t, "admin", "web1")
	tm.send("head -c 30000000 /dev/zero | tr '\\0' x; echo EN''D$((6*7))")
	waitOutput(t, f.reg, "web1", 30_000_000)
	if n := clientsOf(f.reg, "web1"); n != 1 {
		t.Fatalf("%d clients after 30 MB, want the one that does not read", n)
	}
	resume()
	m := tm.expect(`\[termgate\] fell behind the output: skipped (\d+) MB to catch up`)
	out := tm.out.String()
	notice := strings.Index(out, "[termgate] fell behind")
	redraw := strings.LastIndex(out[:notice], "\x18\x1b[?1049l")
	// The redraw is what a fresh attach gets: the scrollback the emulator
	// kept (64 KiB of x's when it kept up with the 30 MB, less when it fell
	// behind and was rebuilt from the ring) and the screen, never the
	// skipped output itself.
	if redraw < 0 || notice-redraw > screen.SnapshotBound(64<<10)+1 {
		t.Fatalf("no bounded redraw right before the notice (skipped %s MB, redraw at %d, %d bytes before the notice):\n%q",
			m[1], redraw, notice-redraw, out[max(0, notice-300):notice])
	}
	tm.send("echo al''ive")
	tm.expect(`alive`)
	if n := clientsOf(f.reg, "web1"); n != 1 {
		t.Fatalf("%d clients after the skip, want 1", n)
	}
}

// Abuse: a client that never reads again while the output goes on is
// dropped once it stayed behind for StuckTimeout, and its connection is
// closed after CloseGrace.
func TestSSHClientThatNeverReadsIsStillCut(t *testing.T) {
	f := newFixtureReg(t, nil, screenReplay(1<<20, time.Second))
	tm, _ := f.attachUnread(t, "admin", "web1")
	tm.send("yes | head -c 300000000")
	eventually(t, "the client that never reads to be dropped", func() bool { return clientsOf(f.reg, "web1") == 0 })
	// (The client's side cannot tell: its copy to the unread stdout blocks.)
	eventually(t, "the connection to be closed", func() bool {
		return strings.Contains(f.logs.String(), "the client takes no output; closing the connection")
	})
	if !regexp.MustCompile(`client dropped.*fell too far behind`).MatchString(f.logs.String()) {
		t.Fatalf("the log does not say the client was dropped for falling behind:\n%s", f.logs.String())
	}
}
