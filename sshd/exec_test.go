package sshd

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// newCommandFixture is a fixture whose Remote is its local backend.
func newCommandFixture(t *testing.T, al *auditLog) *fixture {
	t.Helper()
	var b *local.Backend
	return newFixtureReg(t, func(c *Config) {
		c.Remote = remote.Partial(b)
		c.Audit = audit.New(&al.buf)
	}, func(rc *sessions.Config) { b = rc.Backend.(*local.Backend) })
}

// TestExecCommand: a command for an instance's user name runs there with
// the client's env, its output apart, its status; the gateway's commands
// keep their meaning; every run is audited with its command line.
func TestExecCommand(t *testing.T) {
	al := &auditLog{}
	f := newCommandFixture(t, al)

	c := f.dial(t, "admin", "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Setenv("LANG", "C.UTF-8"); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	s.Stdout, s.Stderr = &out, &errOut
	err = s.Run(`echo "$LANG $TERMGATE_INSTANCE"; echo err >&2; exit 3`)
	var ee *gossh.ExitError
	if !asExit(err, &ee) || ee.ExitStatus() != 3 || out.String() != "C.UTF-8 web1\n" || errOut.String() != "err\n" {
		t.Fatalf("run: %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
	al.wait(t, audit.Command, map[string]any{"instance": "web1", "result": "ok", "exit_code": float64(3), "who": "admin"})

	// As web1@ every command but a bare reset is web1's (contract "SSH");
	// termgate@ and a user name that is no instance reach the gateway's.
	if r := f.run(t, "admin", "web1", "list"); r.code != 127 || !strings.Contains(r.stderr, "list: not found") {
		t.Errorf("web1@ list runs in web1: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, user := range []string{gatewayUser, "alice"} {
		if r := f.run(t, "admin", user, "list"); r.code != 0 || !strings.Contains(r.stdout, "no sessions") {
			t.Errorf("%s@ list is the gateway's: status %d, stdout %q, stderr %q", user, r.code, r.stdout, r.stderr)
		}
	}
	if r := f.run(t, "admin", "web1", "reset"); r.code != 0 || !strings.HasPrefix(r.stdout, "reset web1: new session") {
		t.Errorf("web1@ reset is the gateway's: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// no-pty: the command runs all the same.
	if r := f.run(t, "nopty", "web2", "echo hi"); r.code != 0 || r.stdout != "hi\n" {
		t.Errorf("no-pty key: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestExecRefused: read-only keys run nothing; a key limited by instances=
// gets the not-found message for what it may not use.
func TestExecRefused(t *testing.T) {
	al := &auditLog{}
	f := newCommandFixture(t, al)
	r := f.run(t, "watcher", "web1", "touch x")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "read-only") {
		t.Errorf("read-only key: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	al.wait(t, audit.Command, map[string]any{"instance": "web1", "result": "denied", "reason": "read-only key"})
	// Out of the key's instances=, db1 is not an instance for it: the
	// line is no gateway command: status 1 and the words a missing
	// instance gets (nothing learnt about db1).
	r = f.run(t, "web", "db1", "echo hi")
	missing := f.run(t, "web", "web9", "echo hi")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, sessions.NotFoundMessage("db1")+" (commands run in an instance only") ||
		strings.ReplaceAll(missing.stderr, "web9", "db1") != r.stderr || missing.code != 1 {
		t.Errorf("instances= key on db1: status %d, stdout %q, stderr %q (a missing instance: %d, %q)", r.code, r.stdout, r.stderr, missing.code, missing.stderr)
	}
	if n := f.srv.remoteRunning(); n != 0 {
		t.Errorf("%d ops still running", n)
	}
}

// TestExecTTY: pty-req gives the command a terminal of its size and TERM;
// window-change resizes it.
func TestExecTTY(t *testing.T) {
	f := newCommandFixture(t, &auditLog{})
	c := f.dial(t, "admin", "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out := newStream()
	s.Stdout = out
	in, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("vt100", 17, 91, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(`echo $TERM; stty size; while read x; do [ "$x" = q ] && exit 4; stty size; done`); err != nil {
		t.Fatal(err)
	}
	if m, _ := out.waitFor(reSize("vt100\r\n17 91"), 0); m == nil {
		t.Fatalf("output %q", out.String())
	}
	if err := s.WindowChange(30, 100); err != nil {
		t.Fatal(err)
	}
	// The resize goes through the window watch on its own goroutine: ask
	// until the terminal has it.
	eventually(t, "the resize", func() bool {
		_, _ = in.Write([]byte("\n"))
		time.Sleep(20 * time.Millisecond)
		return strings.Contains(out.String(), "30 100")
	})
	_, _ = in.Write([]byte("q\n"))
	var ee *gossh.ExitError
	if err := s.Wait(); !asExit(err, &ee) || ee.ExitStatus() != 4 {
		t.Fatalf("wait: %v; output %q", err, out.String())
	}
}

func asExit(err error, ee **gossh.ExitError) bool { return errors.As(err, ee) }

func reSize(s string) *regexp.Regexp { return regexp.MustCompile(regexp.QuoteMeta(s)) }

// TestExecSignalAndRevoke: a command killed by a signal reports it with
// exit-signal; a command of a key that is revoked is cut (its channel
// closed, its processes killed) at the next Recheck.
func TestExecSignalAndRevoke(t *testing.T) {
	f := newCommandFixture(t, &auditLog{})
	c := f.dial(t, "admin", "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var ee *gossh.ExitError
	if err := s.Run(`kill -TERM $$`); !asExit(err, &ee) || ee.Signal() != "TERM" {
		t.Fatalf("kill -TERM $$: %v, want exit-signal TERM", err)
	}

	wc := f.dial(t, "web", "web1")
	ws, err := wc.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out := newStream()
	ws.Stdout, ws.Stderr = out, out
	if err := ws.Start(`echo $$; exec sleep 1000`); err != nil {
		t.Fatal(err)
	}
	m, _ := out.waitFor(regexp.MustCompile(`(\d+)\n`), 0)
	if m == nil {
		t.Fatalf("no pid: %q", out.String())
	}
	done := make(chan error, 1)
	go func() { done <- ws.Wait() }()
	f.setKeys(t, map[string]string{"admin": ""})
	f.srv.Recheck()
	select {
	case <-done:
	case <-time.After(revokeWithin):
		t.Fatal("the revoked key's command still runs")
	}
	if !strings.Contains(out.String(), "termgate: ") {
		t.Errorf("no revocation notice: %q", out.String())
	}
	eventually(t, "the command's process to end", func() bool {
		_, err := os.Stat("/proc/" + m[1] + "/cmdline")
		b, _ := os.ReadFile("/proc/" + m[1] + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	})
	eventually(t, "the op to end", func() bool { return f.srv.remoteRunning() == 0 })
	closed := make(chan error, 1)
	go func() { closed <- wc.Wait() }()
	select {
	case <-closed:
	case <-time.After(revokeWithin):
		t.Error("the connection of a revoked key stayed open")
	}
}
