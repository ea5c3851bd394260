package sshd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// TestHandAndGrant: an observer raises a hand (once, however often), the
// writer sees it and grants write access; the observer then types into the
// shell. ssh HOST who shows it all.
func TestHandAndGrant(t *testing.T) {
	f := newFixture(t, nil)
	w := f.attach(t, "admin", "web1", 80, 24)
	w.pid()
	o := f.attach(t, "watcher", "web1", 80, 24)
	o.send("echo typed-$((6*7))")
	if m, _ := o.errOut.waitFor(regexp.MustCompile(`read-only: your input is not sent to the shell`), 0); m == nil {
		t.Fatalf("no read-only notice: %q", o.errOut.String())
	}
	for range 3 {
		if r := f.run(t, "watcher", gatewayUser, "hand web1"); r.code != 0 || !strings.HasPrefix(r.stdout, "hand raised on web1") {
			t.Fatalf("hand: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	}
	w.expect(`\[termgate\] watcher via ssh raises a hand: they ask to type; let them: ssh HOST grant web1 watcher`)
	r := f.run(t, "admin", gatewayUser, "who web1")
	if r.code != 0 || !regexp.MustCompile(`(?m)^WHO +VIA +ACCESS +SINCE +LAST TYPED +REMOTE$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^admin +ssh +read-write +\S+ +(never|\d+s ago) +127\.0\.0\.1:\d+$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^watcher +ssh +read-only, hand raised +\S+ +never +127\.0\.0\.1:\d+$`).MatchString(r.stdout) {
		t.Fatalf("who: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, "watcher", gatewayUser, "grant web1 watcher"); r.code != 1 || !strings.HasPrefix(r.stderr, "grant refused: this key is read-only") {
		t.Fatalf("observer's grant: status %d, stderr %q", r.code, r.stderr)
	}
	if r := f.run(t, "admin", gatewayUser, "grant web1 nobody"); r.code != 1 || !strings.Contains(r.stderr, `no observer named "nobody"`) {
		t.Fatalf("grant to nobody: status %d, stderr %q", r.code, r.stderr)
	}
	if r := f.run(t, "admin", gatewayUser, "hand web1"); r.code != 1 {
		t.Fatalf("a writer's hand: status %d, stderr %q", r.code, r.stderr)
	}
	if r := f.run(t, "admin", gatewayUser, "grant web1 watcher"); r.code != 0 || r.stdout != "granted watcher write access to web1 until the session is reset (1 client)\n" {
		t.Fatalf("grant: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	o.expect(`\[termgate\] admin \(ssh\) gave you write access for this session`)
	o.send("echo granted-$((6*7))")
	w.expect(`granted-42`)
	if r := f.run(t, "web", gatewayUser, "who web1"); r.code != 0 || !regexp.MustCompile(`(?m)^watcher +ssh +granted +\S+ +\d+s ago`).MatchString(r.stdout) {
		t.Fatalf("who after the grant: status %d, stdout %q", r.code, r.stdout)
	}
	if r := f.run(t, "web", gatewayUser, "who db1"); r.code != 1 {
		t.Fatalf("who db1 for a web* key: status %d", r.code)
	}
}

// TestNotifyJoins: with the registry's NotifyJoins (--notify-joins), an
// SSH client reads a line when someone joins or leaves.
func TestNotifyJoins(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) { c.NotifyJoins = true })
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	b := f.attach(t, "watcher", "web1", 80, 24)
	a.expect(`\[termgate\] watcher via ssh joined \(read-only\)`)
	_ = b.client.Close()
	a.expect(`\[termgate\] watcher via ssh left \(read-only\)`)
}
