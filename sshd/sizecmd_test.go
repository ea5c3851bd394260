package sshd

import (
	"regexp"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// TestSizeFallBackAndPin: the size follows the latest read-write client and
// falls back when it leaves (contract, session semantics 4), as ssh HOST
// size shows without typing anything; a pin holds it; observers may look
// but not pin.
func TestSizeFallBackAndPin(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.expectSize("24 80", regexp.MustCompile(`^$`))
	b := f.attach(t, "web", "web1", 120, 40)
	b.expectSize("40 120", regexp.MustCompile(`^24 80$`))
	if r := f.run(t, "admin", gatewayUser, "size web1"); r.code != 0 || r.stdout != "size web1: 120x40, follows the clients (latest)\n" {
		t.Fatalf("size: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	_ = b.client.Close()
	// Within a second of b leaving, with nobody typing.
	deadline := time.Now().Add(time.Second)
	for {
		r := f.run(t, "watcher", gatewayUser, "size web1")
		if r.code == 0 && r.stdout == "size web1: 80x24, follows the clients (latest)\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("size a second after the larger client left: status %d, stdout %q", r.code, r.stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.expectSize("24 80", regexp.MustCompile(`^40 120$`)) // applied asynchronously

	if r := f.run(t, "admin", gatewayUser, "size web1 132x50"); r.code != 0 || r.stdout != "size web1: 132x50, pinned (ssh HOST size web1 auto to follow the clients again)\n" {
		t.Fatalf("pin: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	a.expectSize("50 132", regexp.MustCompile(`^24 80$`))
	if err := a.sess.WindowChange(30, 100); err != nil {
		t.Fatal(err)
	}
	a.expectSize("50 132", regexp.MustCompile(`^$`))
	if r := f.run(t, "admin", gatewayUser, "size web1 auto"); r.code != 0 {
		t.Fatalf("auto: status %d, stderr %q", r.code, r.stderr)
	}
	a.expectSize("30 100", regexp.MustCompile(`^50 132$`))

	for _, tc := range []struct {
		key, cmd string
		code     int
		stderr   string
	}{
		{"watcher", "size web1 90x20", 1, `^size refused: this key is read-only`},
		{"admin", "size web1 90", 2, `^termgate: size "90": use COLSxROWS`},
		{"admin", "size web1 0x10", 2, `use COLSxROWS with 1\.\.1000`},
		{"web", "size db1", 1, "^" + regexp.QuoteMeta(sessions.NotFoundMessage("db1"))},
		{"admin", "size web2", 1, "^" + regexp.QuoteMeta(sessions.NoSessionMessage("web2"))},
		{"admin", "size", 2, `size takes an instance name`},
	} {
		r := f.run(t, tc.key, gatewayUser, tc.cmd)
		if r.code != tc.code || !regexp.MustCompile(tc.stderr).MatchString(r.stderr) {
			t.Errorf("%q with key %s: status %d, stderr %q", tc.cmd, tc.key, r.code, r.stderr)
		}
	}
}
