package sshd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// TestKeepCommand: ssh HOST keep postpones reaping, list shows when; a
// read-only key cannot keep, nor can anyone past --max-keep.
func TestKeepCommand(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	_ = a.client.Close()
	for _, tc := range []struct {
		key, cmd       string
		code           int
		stdout, stderr string
	}{
		{"admin", "keep web1 8h", 0, `^keep web1: kept until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in 8h\) with no client attached\n$`, `^$`},
		{"watcher", "keep web1 1h", 1, `^$`, `^keep refused: this key is read-only`},
		{"admin", "keep web1 48h", 1, `^$`, `^keep 48h0m0s is longer than the gateway allows \(--max-keep 24h0m0s\)`},
		{"admin", "keep web1 soon", 2, `^$`, `^termgate: keep "soon": use a duration such as 8h`},
		{"admin", "keep web2 1h", 1, `^$`, "^" + regexp.QuoteMeta(sessions.NoSessionMessage("web2"))},
		{"web", "keep db1 1h", 1, `^$`, "^" + regexp.QuoteMeta(sessions.NotFoundMessage("db1"))},
	} {
		r := f.run(t, tc.key, gatewayUser, tc.cmd)
		if r.code != tc.code || !regexp.MustCompile(tc.stdout).MatchString(r.stdout) || !regexp.MustCompile(tc.stderr).MatchString(r.stderr) {
			t.Errorf("%q with key %s: status %d, stdout %q, stderr %q", tc.cmd, tc.key, r.code, r.stdout, r.stderr)
		}
	}
	waitList := func(re string) {
		t.Helper()
		for i := 0; ; i++ {
			r := f.run(t, "admin", gatewayUser, "list")
			if regexp.MustCompile(re).MatchString(r.stdout) {
				return
			}
			if i == 50 {
				t.Fatalf("list never matched %q: %q", re, r.stdout)
			}
		}
	}
	waitList(`(?m)^web1 .* in (8h|7h59m) \(kept\)$`)
	if r := f.run(t, "admin", gatewayUser, "keep web1 off"); r.code != 0 || !strings.HasPrefix(r.stdout, "keep web1: off") {
		t.Fatalf("keep off: status %d, stdout %q", r.code, r.stdout)
	}
	waitList(`(?m)^web1 .* in (30m|29m)$`)
}
