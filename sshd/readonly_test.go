package sshd

import (
	"regexp"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
)

// TestReadOnlyKeyWatches is issue 12 item 1 over SSH: a read-only key
// (also limited with instances=) gets the replay and the live output, its
// keys never reach the shell (it is told once), its window size never
// changes the shell's, and it cannot reset, in either command form.
func TestReadOnlyKeyWatches(t *testing.T) {
	f := newFixture(t, nil)
	w := f.attach(t, "admin", "web1", 100, 30)
	w.send(`echo "before-$((6*7))."`)
	w.expect(`before-42\.`)
	w.expectSize("30 100", regexp.MustCompile(`^$`))

	o := f.attach(t, "watcher", "web1", 40, 10)
	o.expect(`before-42\.`) // the replay
	eventually(t, "two clients", func() bool { return clientsOf(f.reg, "web1") == 2 })
	if err := o.sess.WindowChange(12, 50); err != nil {
		t.Fatal(err)
	}
	o.send("echo observer-typed-$((3*3))")
	const notice = "[termgate] read-only: your input is not sent to the shell"
	if m, _ := o.errOut.waitFor(regexp.MustCompile(regexp.QuoteMeta(notice)), 0); m == nil {
		t.Fatalf("no notice for the observer: stderr %q", o.errOut.String())
	}
	o.send("echo observer-again")
	o.send("\x03exit")

	// The writer's shell got none of it, kept its size, and the observer
	// sees the writer's output live.
	for i := 0; i < 3; i++ {
		w.send(`echo "size=$(stty size)."`)
		if got := w.expect(`size=(\d+ \d+)\.`)[1]; got != "30 100" {
			t.Fatalf("the shell's size became %q after an observer attached with 40x10 and resized to 50x12", got)
		}
	}
	w.send(`echo "live-$((7*8))."`)
	w.expect(`live-56\.`)
	o.expect(`live-56\.`)
	if strings.Contains(w.out.String(), "observer") || strings.Contains(o.out.String(), "observer-typed-9") {
		t.Fatalf("the observer's input reached the shell: writer saw %q", w.out.String())
	}
	if n := strings.Count(o.errOut.String(), notice); n != 1 {
		t.Fatalf("the notice came %d times, want once: %q", n, o.errOut.String())
	}
	if clientsOf(f.reg, "web1") != 2 {
		t.Fatal("the observer's input ended a client")
	}

	// Reset is refused in both forms; the limit still applies.
	refused := regexp.MustCompile(`^reset refused: this key is read-only`)
	for _, tc := range []struct{ user, cmd string }{{"me", "reset web1"}, {"web1", "reset"}} {
		r := f.run(t, "watcher", tc.user, tc.cmd)
		if r.code != 1 || r.stdout != "" || !refused.MatchString(r.stderr) {
			t.Errorf("%s@ %q: status %d, stdout %q, stderr %q", tc.user, tc.cmd, r.code, r.stdout, r.stderr)
		}
	}
	if r := f.run(t, "watcher", "me", "reset db1"); r.code != 1 || r.stderr != "instance \"db1\" not found or not running\n" {
		t.Errorf("reset db1 with a read-only key limited to web*: status %d, stderr %q", r.code, r.stderr)
	}
	w.send(`echo "pid=$$."`)
	w.expect(`pid=\d+\.`) // the writer's shell was not reset under it
	if strings.Contains(w.out.String(), "session reset") {
		t.Fatalf("a read-only key reset the session: %q", w.out.String())
	}
	lim := f.attach(t, "watcher", "db1", 80, 24)
	if code := lim.wait(); code != 1 || !strings.Contains(lim.errOut.String(), `instance "db1" not found or not running`) {
		t.Fatalf("read-only key attaching outside its instances=: status %d, stderr %q", code, lim.errOut.String())
	}
}

// TestListShowsWhoIsAttached is issue 12 item 2 over SSH: list prints each
// attached client with its name, route, address, time and access, and
// forgets a client that left.
func TestListShowsWhoIsAttached(t *testing.T) {
	f := newFixture(t, nil)
	w := f.attach(t, "admin", "web1", 80, 24)
	w.pid()
	o := f.attach(t, "watcher", "web1", 80, 24)
	o.expect(`pid=`)
	eventually(t, "two clients", func() bool { return clientsOf(f.reg, "web1") == 2 })

	r := f.run(t, "watcher", "me", "list")
	if r.code != 0 {
		t.Fatalf("list: status %d, stderr %q", r.code, r.stderr)
	}
	t.Logf("list:\n%s", r.stdout)
	tables := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n\n")
	if len(tables) != 2 {
		t.Fatalf("list printed %q, want the sessions and who is attached", r.stdout)
	}
	rows := strings.Split(tables[1], "\n")
	when := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
	want := []*regexp.Regexp{
		regexp.MustCompile(`^INSTANCE +WHO +VIA +REMOTE +SINCE +ACCESS$`),
		regexp.MustCompile(`^web1 +admin +ssh +127\.0\.0\.1:\d+ +` + when + ` +read-write$`),
		regexp.MustCompile(`^web1 +watcher +ssh +127\.0\.0\.1:\d+ +` + when + ` +read-only$`),
	}
	if len(rows) != len(want) {
		t.Fatalf("attached table %q", tables[1])
	}
	for i, re := range want {
		if !re.MatchString(rows[i]) {
			t.Fatalf("row %q does not match %s (all: %q)", rows[i], re, r.stdout)
		}
	}

	_ = o.client.Close()
	eventually(t, "the observer to leave", func() bool { return clientsOf(f.reg, "web1") == 1 })
	r = f.run(t, "admin", "me", "list")
	if strings.Contains(r.stdout, "watcher") || !regexp.MustCompile(`(?m)^web1 +admin +ssh `).MatchString(r.stdout) {
		t.Fatalf("after the observer left: %q", r.stdout)
	}
}

// TestReadOnlyCertificate: a certificate with the termgate-read-only
// extension watches like a read-only key: its keys never reach the shell,
// it cannot reset, and list names it read-only by its key ID.
func TestReadOnlyCertificate(t *testing.T) {
	cf := newCertFixture(t)
	w := cf.attach(t, "admin", "web1", 80, 24)
	w.pid()
	signer := cf.cert(t, func(c *gossh.Certificate) gossh.Signer {
		c.Extensions[keys.CertReadOnly] = ""
		return nil
	})
	c, err := gossh.Dial("tcp", cf.addr, cf.config(signer, "web1"))
	if err != nil {
		t.Fatalf("read-only certificate: %v", err)
	}
	defer c.Close()
	o := cf.attachOn(t, c, 100, 40)
	o.expect(`pid=\d+\.`)
	o.send("echo cert-typed")
	if m, _ := o.errOut.waitFor(regexp.MustCompile(`read-only: your input is not sent`), 0); m == nil {
		t.Fatalf("no notice: %q", o.errOut.String())
	}
	w.send(`echo "size=$(stty size) x=$((2*21))."`)
	w.expect(`size=24 80 x=42\.`)
	if strings.Contains(w.out.String(), "cert-typed") {
		t.Fatalf("the certificate's input reached the shell: %q", w.out.String())
	}
	if r := runWith(t, cf.fixture, cf.config(signer, "web1"), "reset"); r.code != 1 || !strings.HasPrefix(r.stderr, "reset refused: this certificate is read-only") {
		t.Fatalf("reset with a read-only certificate: status %d, stderr %q", r.code, r.stderr)
	}
	if r := runWith(t, cf.fixture, cf.config(signer, "me"), "list"); !regexp.MustCompile(`(?m)^web1 +carol +ssh +\S+ +\S+ +read-only$`).MatchString(r.stdout) {
		t.Fatalf("list: %q", r.stdout)
	}
}

// An observer watches a session and never starts one (issue 39 item 4):
// a read-only key attaching where there is no session is told so, with
// exit status 1, and nothing is started; once the writer started one it
// watches it.
func TestReadOnlyKeyStartsNoSession(t *testing.T) {
	f := newFixture(t, nil)
	o := f.attach(t, "watcher", "web1", 80, 24)
	if code := o.wait(); code != 1 {
		t.Fatalf("the observer's attach with no session: exit %d, want 1", code)
	}
	if !strings.Contains(o.errOut.String(), "no session yet in web1: a read-only credential watches a session and does not start one") {
		t.Fatalf("the observer was told %q", o.errOut.String())
	}
	if n := len(f.reg.Sessions()); n != 0 {
		t.Fatalf("%d sessions after the observer's refused attach, want none", n)
	}
	w := f.attach(t, "admin", "web1", 80, 24)
	w.send(`echo "started-$((6*7))."`)
	w.expect(`started-42\.`)
	again := f.attach(t, "watcher", "web1", 80, 24)
	again.expect(`started-42\.`) // the replay
}
