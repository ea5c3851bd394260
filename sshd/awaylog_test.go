package sshd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// TestAwayNoticeAndLog: a key that detached and comes back gets a
// [termgate] line after the redraw saying what went by, the commands that
// finished with their exit status included (OSC 133 marks, printed here by
// hand), and ssh HOST log INSTANCE prints the output since it left.
func TestAwayNoticeAndLog(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.send("echo before-$((6*7))")
	a.expect("before-42")
	_ = a.client.Close()
	eventually(t, "admin detached", func() bool { return clientsOf(f.reg, "web1") == 0 })

	b := f.attach(t, "web", "web1", 80, 24)
	b.send(`printf '\033]133;C\007'; echo while-$((6*7)); printf '\033]133;D;3\007'`)
	b.expect("while-42")

	back := f.attach(t, "admin", "web1", 80, 24)
	back.expect(`\r\n\[termgate\] away \d+s: \d+ B of output, 1 command finished \(exit 3\)\r\n`)

	r := f.run(t, "admin", gatewayUser, "log web1")
	if r.code != 0 || !strings.Contains(r.stdout, "while-42") || strings.Contains(r.stdout, "before-42") {
		t.Fatalf("log: status %d, stdout %q; want what came after the detach only", r.code, r.stdout)
	}
	if !regexp.MustCompile(`^termgate: web1 since you left at \d\d:\d\d:\d\d UTC \(\d+s ago\): \d+ B of output, 1 command finished \(exit 3\)\n$`).MatchString(r.stderr) {
		t.Errorf("log: stderr %q", r.stderr)
	}

	w := f.attach(t, "watcher", "web1", 80, 24)
	w.expect("while-42")
	_ = w.client.Close()
	eventually(t, "the watcher detached", func() bool { return clientsOf(f.reg, "web1") == 2 })
	if r := f.run(t, "watcher", gatewayUser, "log web1"); r.code != 0 || !strings.Contains(r.stderr, "0 B of output") {
		t.Errorf("log for a read-only key: status %d, stderr %q", r.code, r.stderr)
	}

	for _, tc := range []struct {
		key, cmd string
		code     int
		stderr   string
	}{
		{"web", "log web1", 1, "^" + regexp.QuoteMeta(sessions.NeverLeftMessage("web1"))}, // still attached, never left
		{"web", "log db1", 1, "^" + regexp.QuoteMeta(sessions.NotFoundMessage("db1"))},
		{"admin", "log web2", 1, "^" + regexp.QuoteMeta(sessions.NoSessionMessage("web2"))},
		{"admin", "log", 2, `log takes an instance name`},
	} {
		r := f.run(t, tc.key, gatewayUser, tc.cmd)
		if r.code != tc.code || !regexp.MustCompile(tc.stderr).MatchString(r.stderr) {
			t.Errorf("%q with key %s: status %d, stderr %q", tc.cmd, tc.key, r.code, r.stderr)
		}
	}
}

// When the replay buffer no longer reaches back to the detach, log says
// so on stderr and prints what it still holds, from a line's start.
func TestAwayLogBufferWrapped(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) { c.BufferSize = sessions.MinBufferSize })
	a := f.attach(t, "admin", "web1", 80, 24)
	a.send("echo before-$((6*7))")
	a.expect("before-42")
	_ = a.client.Close()
	eventually(t, "admin detached", func() bool { return clientsOf(f.reg, "web1") == 0 })
	b := f.attach(t, "web", "web1", 80, 24)
	b.send(`i=0; while [ $i -lt 1000 ]; do echo "line $i of the flood"; i=$((i+1)); done; echo end-$((6*7))`)
	b.expect("end-42")

	r := f.run(t, "admin", gatewayUser, "log web1")
	if r.code != 0 || !strings.Contains(r.stdout, "end-42") || strings.Contains(r.stdout, "line 0 of") || len(r.stdout) > sessions.MinBufferSize {
		t.Fatalf("log: status %d, %d bytes of stdout ending %q", r.code, len(r.stdout), r.stdout[max(0, len(r.stdout)-40):])
	}
	if !regexp.MustCompile(`(?m)^termgate: the buffer no longer reaches back that far: the first \d+ bytes are gone`).MatchString(r.stderr) {
		t.Errorf("log: stderr %q, want the note that the buffer no longer reaches back", r.stderr)
	}
}
