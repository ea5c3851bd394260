package sshd

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/termtest"
)

func TestAttachSameShellAfterReattach(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 100, 30)
	pid := a.pid()
	a.send(`echo "$((6*7))x"`)
	a.expect(`42x`)
	_ = a.client.Close() // the client goes away (what ~. does without multiplexing)
	eventually(t, "the detach", func() bool { return clientsOf(f.reg, "web1") == 0 })

	b := f.attach(t, "admin", "web1", 100, 30)
	b.expect(`42x`) // the replay
	if got := b.pid(); got != pid {
		t.Fatalf("reattached to shell %s, want the same shell %s", got, pid)
	}
}

func TestAttachChannelCloseDetaches(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t, "admin", "web1")
	a := f.attachOn(t, c, 80, 24)
	pid := a.pid()
	_ = a.sess.Close() // only the channel; the connection stays (a multiplexed ~.)
	eventually(t, "the detach", func() bool { return clientsOf(f.reg, "web1") == 0 })
	b := f.attachOn(t, c, 80, 24)
	if got := b.pid(); got != pid {
		t.Fatalf("second channel reached shell %s, want %s", got, pid)
	}
}

func TestAttachTwoClients(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	pid := a.pid()
	b := f.attach(t, "web", "web1", 80, 24)
	if got := b.pid(); got != pid {
		t.Fatalf("second client in shell %s, want %s", got, pid)
	}
	a.send(`echo "$((7*8))y"`)
	a.expect(`56y`)
	b.expect(`56y`)
	if n := clientsOf(f.reg, "web1"); n != 2 {
		t.Fatalf("registry has %d clients, want 2", n)
	}
}

func TestAttachShellExitStatus(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	a.send("exit 3")
	if code := a.wait(); code != 3 {
		t.Fatalf("exit status %d, want 3", code)
	}
}

func TestAttachShellExitWithBackgroundJob(t *testing.T) {
	// The job keeps the terminal open; the client still gets the status.
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	a.send("sleep 30 & exit 3")
	if code := a.wait(); code != 3 {
		t.Fatalf("exit status %d, want 3", code)
	}
}

func TestAttachRawOutput(t *testing.T) {
	// With onlcr off the shell's "\n" reaches the client as is: a text
	// write (session.Write, gliderlabs' Session.Write before it) would
	// have made it "\r\n".
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	a.send(`stty -onlcr; printf 'A%sB\nC%sD\n' 1 2; stty onlcr`)
	m := a.expect(`A1B(\r?)\nC2D`)
	if m[1] != "" {
		t.Fatalf("output was rewritten: %q", m[0])
	}
}

func TestAttachPTYSizes(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 100, 30)
	a.send(`echo "size=$(stty size)."`)
	a.expect(`size=30 100\.`)

	// 0x0 is unknown: the session keeps its size.
	b := f.attach(t, "admin", "web1", 0, 0)
	b.send(`echo "size=$(stty size)."`)
	b.expect(`size=30 100\.`)
	if s := b.errOut.String(); s != "" {
		t.Fatalf("0x0 got a warning: %q", s)
	}

	// Out of range: a warning, and the gateway carries on.
	c := f.attach(t, "admin", "web1", 100000, 100000)
	if _, at := c.errOut.waitFor(regexp.MustCompile(`window size 100000x100000 is outside 1\.\.1000`), 0); at == 0 {
		t.Fatalf("no warning on stderr: %q", c.errOut.String())
	}
	c.send(`echo "size=$(stty size)."`)
	c.expect(`size=30 100\.`)

	// A window change resizes the session.
	if err := a.sess.WindowChange(40, 120); err != nil {
		t.Fatal(err)
	}
	a.expectSize("40 120", regexp.MustCompile(`^30 100$`))
	// An out-of-range change is ignored.
	if err := c.sess.WindowChange(5000, 5000); err != nil {
		t.Fatal(err)
	}
	c.send(`echo "size=$(stty size)."`)
	c.expect(`size=40 120\.`)
}

func TestAttachNewSessionDefaultSizeAndTerm(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web2", 0, 0) // requests TERM=xterm
	a.send(`echo "size=$(stty size) term=$TERM."`)
	a.expect(`size=24 80 term=xterm\.`)
}

func TestAttachWithoutPTY(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t, "admin", "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out := newStream()
	s.Stdout = out
	stdin, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("echo \"$((6*9))z\"; exit 4\r")); err != nil {
		t.Fatal(err)
	}
	if m, _ := out.waitFor(regexp.MustCompile(`54z`), 0); m == nil {
		t.Fatalf("no output: %q", out.String())
	}
	if code := termtest.ExitStatus(t, s.Wait()); code != 4 {
		t.Fatalf("exit status %d, want 4", code)
	}
}

func TestAttachRefusals(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name, key, user, stderr string
	}{
		{"unknown instance", "admin", "nope", `instance "nope" not found or not running`},
		{"instance not allowed for the key", "web", "db1", `instance "db1" not found or not running`},
		{"invalid name", "admin", "-bad", `invalid instance name "-bad"`},
		{"no-pty key", "nopty", "web1", "may not open terminals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.attach(t, tc.key, tc.user, 80, 24)
			if code := a.wait(); code != 1 {
				t.Fatalf("exit status %d, want 1", code)
			}
			if got := a.errOut.String(); !strings.Contains(got, tc.stderr) {
				t.Fatalf("stderr %q, want %q", got, tc.stderr)
			}
			if got := a.out.String(); got != "" {
				t.Fatalf("stdout %q, want nothing", got)
			}
		})
	}
	// A refused key learns nothing: db1 exists (admin can attach).
	if got := f.run(t, "web", "db1", "reset").stderr; got != "instance \"db1\" not found or not running\n" {
		t.Fatalf("stderr %q", got)
	}
	if got := f.run(t, "admin", "nope", "reset").stderr; got != "instance \"nope\" not found or not running\n" {
		t.Fatalf("stderr %q", got)
	}
}

func TestAttachResetMovesClient(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	old := a.pid()

	r := f.run(t, "web", "someone", "reset web1")
	if r.code != 0 {
		t.Fatalf("reset: status %d, stderr %q", r.code, r.stderr)
	}
	m := regexp.MustCompile(`^reset web1: new session ([0-9a-f]+)\n$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("reset printed %q", r.stdout)
	}
	a.expect(`\r\n\[termgate\] session reset by web \(ssh\): fresh shell\r\n`)
	if got := a.pid(); got == old {
		t.Fatalf("still in shell %s after the reset", got)
	}
	if got := f.reg.Sessions(); len(got) != 1 || got[0].Session != m[1] || got[0].Clients != 1 {
		t.Fatalf("sessions after reset: %+v, want session %s with the client", got, m[1])
	}

	// The bare form takes the instance from the user name.
	r = f.run(t, "admin", "web1", "reset")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "reset web1: new session ") {
		t.Fatalf("bare reset: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	a.expect(`session reset by admin \(ssh\): fresh shell`)
	a.pid()
}

// TestAttachTildeDotDetaches: ~. that reaches the gateway (the client's
// ssh did not take it: a cursor position report came between the Enter
// and the ~, as busybox's prompt causes) detaches with a notice and exit
// status 0; the shell keeps running. A ~ in the middle of a line, and ~~
// at the start of one, go to the shell.
func TestAttachTildeDotDetaches(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	pid := a.pid()
	a.send(`echo "a~.b"`)
	a.expect(`a~\.b`)
	a.send(`~~.; echo "[tilde]"`) // ~~ sends one ~: the shell gets "~.; echo ..."
	a.expect(`[^~]~\.; echo "\[tilde\]"`)
	a.expect(`\[tilde\]`)
	if _, err := io.WriteString(a.stdin, "\r\x1b[24;1R~."); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(); code != 0 {
		t.Fatalf("exit status after ~.: %d, want 0", code)
	}
	if !strings.Contains(a.errOut.String(), "[termgate] detached; the shell keeps running") {
		t.Fatalf("no detach notice; stderr %q", a.errOut.String())
	}
	eventually(t, "the detach", func() bool { return clientsOf(f.reg, "web1") == 0 })
	b := f.attach(t, "admin", "web1", 80, 24)
	if got := b.pid(); got != pid {
		t.Fatalf("after ~. the shell is %s, want the same %s", got, pid)
	}
}
