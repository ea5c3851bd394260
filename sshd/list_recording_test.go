package sshd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// namedRecording is an observer that only names its recording.
type namedRecording struct{ name string }

func (namedRecording) Output([]byte)        {}
func (namedRecording) Resize(sessions.Size) {}
func (namedRecording) Close()               {}
func (o namedRecording) Recording() string  { return o.name }

// With recordings, list names each session's file (relative to
// --record-dir) in a RECORDING column.
func TestListShowsRecordings(t *testing.T) {
	f := newFixtureReg(t, nil, func(c *sessions.Config) {
		c.Observe = func(s sessions.ObservedSession) sessions.Observer {
			return namedRecording{name: s.Instance + "/" + s.Session + ".cast"}
		}
	})
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	r := f.run(t, "admin", "me", "list")
	if r.code != 0 {
		t.Fatalf("list: status %d, stderr %q", r.code, r.stderr)
	}
	table, _, _ := strings.Cut(r.stdout, "\n\n")
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != 2 || !regexp.MustCompile(`^INSTANCE +SESSION +CLIENTS +IDLE SINCE +BYTES +RECORDING$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^web1 +([0-9a-f]{16}) +1 +- +\d+ +web1/([0-9a-f]{16})\.cast$`).MatchString(lines[1]) {
		t.Fatalf("list printed %q", r.stdout)
	}
	m := regexp.MustCompile(`^web1 +([0-9a-f]{16}) .* web1/([0-9a-f]{16})\.cast$`).FindStringSubmatch(lines[1])
	if m == nil || m[1] != m[2] {
		t.Fatalf("the recording does not name the session: %q", lines[1])
	}
}
