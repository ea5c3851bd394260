package sshd

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/termgate/termgate/sessions"
)

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want command
		err  string
	}{
		{raw: "", want: command{verb: verbAttach}},
		{raw: "  \t ", want: command{verb: verbAttach}},
		{raw: "reset", want: command{verb: verbReset}},
		{raw: "reset web1", want: command{verb: verbReset, instance: "web1"}},
		{raw: "  reset   web1  ", want: command{verb: verbReset, instance: "web1"}},
		{raw: "reset 'web1", want: command{verb: verbReset, instance: "'web1"}}, // CheckName refuses it later
		{raw: "list", want: command{verb: verbList}},
		{raw: "help", want: command{verb: verbHelp}},
		{raw: "help reset", want: command{verb: verbHelp}},
		{raw: "--help", want: command{verb: verbHelp}},
		{raw: "reset a b", err: "reset takes at most one instance name"},
		{raw: "list all", err: "list takes no arguments"},
		{raw: "bash", err: `unknown command "bash"`},
		{raw: "RESET web1", err: `unknown command "RESET"`},
		{raw: "'reset", err: `unknown command "'reset"`},
		{raw: "attach web1", err: `unknown command "attach"`},
	} {
		got, err := parseCommand(tc.raw)
		if tc.err != "" {
			var ue *usageError
			if !errors.As(err, &ue) || err.Error() != tc.err {
				t.Errorf("parseCommand(%q) error %v, want usage error %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseCommand(%q) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, seed := range []string{"", " ", "reset", "reset web1", "reset a b", "list", "list x",
		"help", "-h", "bogus", "reset\tweb1\n", "reset 'x", "\x00", "reset \u00a0web1", "\xff\xfe"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := parseCommand(raw)
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("parseCommand(%q): error %T, want *usageError", raw, err)
			}
			return
		}
		if c.verb < verbAttach || c.verb > verbHelp {
			t.Fatalf("parseCommand(%q): verb %v", raw, c.verb)
		}
		if c.verb != verbReset && c.instance != "" {
			t.Fatalf("parseCommand(%q): %v with instance %q", raw, c.verb, c.instance)
		}
		if strings.IndexFunc(c.instance, unicode.IsSpace) >= 0 {
			t.Fatalf("parseCommand(%q): instance %q has white space", raw, c.instance)
		}
		back, err := parseCommand(c.String())
		if err != nil || back != c {
			t.Fatalf("parseCommand(%q) = %+v, but its String %q parses to %+v, %v", raw, c, c.String(), back, err)
		}
	})
}

func TestCommandHelp(t *testing.T) {
	f := newFixture(t, nil)
	r := f.run(t, "admin", "anyone", "help")
	if r.code != 0 || r.stdout != usage || r.stderr != "" {
		t.Fatalf("help: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestCommandUnknown: for the gateway's own user name a command line that
// is none of its commands is a usage error; for an instance's it is a
// command to run there (ssh INSTANCE@HOST CMD), which a gateway without a
// remote.Runner refuses plainly.
func TestCommandUnknown(t *testing.T) {
	f := newFixture(t, nil)
	for _, cmd := range []string{"bash -l", "list web1", "reset web1 web2"} {
		r := f.run(t, "admin", gatewayUser, cmd)
		if r.code != 2 || r.stdout != "" || !strings.HasSuffix(r.stderr, usage) || !strings.HasPrefix(r.stderr, "termgate: ") {
			t.Fatalf("%q: status %d, stdout %q, stderr %q", cmd, r.code, r.stdout, r.stderr)
		}
		r = f.run(t, "admin", "web1", cmd)
		if r.code != 1 || r.stdout != "" || r.stderr != "termgate: this gateway's backend cannot run commands in instances\n" {
			t.Fatalf("web1@ %q without a runner: status %d, stdout %q, stderr %q", cmd, r.code, r.stdout, r.stderr)
		}
	}
}

func TestCommandList(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.run(t, "admin", "me", "list"); r.code != 0 || r.stdout != "no sessions\n" {
		t.Fatalf("empty list: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	if r := f.run(t, "admin", "me", "reset db1"); r.code != 0 {
		t.Fatalf("reset db1: status %d, stderr %q", r.code, r.stderr)
	}

	r := f.run(t, "admin", "me", "list")
	if r.code != 0 {
		t.Fatalf("list: status %d, stderr %q", r.code, r.stderr)
	}
	sessionsTable, _, _ := strings.Cut(r.stdout, "\n\n") // then who is attached
	lines := strings.Split(strings.TrimSuffix(sessionsTable, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^INSTANCE +SESSION +CLIENTS +IDLE SINCE +BYTES +REAPED$`).MatchString(lines[0]) {
		t.Fatalf("list printed %q", r.stdout)
	}
	// REAPED: when the idle session is reaped (the fixture's idle timeout
	// is the default 30m).
	row := map[string]*regexp.Regexp{
		"web1": regexp.MustCompile(`^web1 +[0-9a-f]{16} +1 +- +[1-9][0-9]* +-$`),
		"db1":  regexp.MustCompile(`^db1 +[0-9a-f]{16} +0 +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ +\d+ +in (30m|29m)$`),
	}
	for _, l := range lines[1:] {
		re := row[strings.Fields(l)[0]]
		if re == nil || !re.MatchString(l) {
			t.Fatalf("list row %q (all: %q)", l, r.stdout)
		}
	}

	// A key limited to web* sees web1 only.
	// (Match whole lines: a session ID may contain "db1".)
	r = f.run(t, "web", "me", "list")
	if r.code != 0 || regexp.MustCompile(`(?m)^db1 `).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^web1 `).MatchString(r.stdout) {
		t.Fatalf("limited list: status %d, stdout %q", r.code, r.stdout)
	}
}

func TestCommandReset(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		key, user, cmd string
		code           int
		stdout, stderr string
	}{
		{"admin", "me", "reset web2", 0, `^reset web2: new session [0-9a-f]{16}\n$`, `^$`},
		{"admin", "web2", "reset", 0, `^reset web2: new session [0-9a-f]{16}\n$`, `^$`},
		{"web", "me", "reset web2", 0, `^reset web2: new session [0-9a-f]{16}\n$`, `^$`},
		{"web", "me", "reset db1", 1, `^$`, `^instance "db1" not found or not running\n$`},
		{"nopty", "me", "reset web1", 0, `^reset web1: new session`, `^$`},
		{"admin", "me", "reset nope", 1, `^$`, `^instance "nope" not found or not running\n$`},
		{"admin", "me", "reset ../etc", 1, `^$`, `^invalid instance name "\.\./etc"`},
		{"admin", "me", "reset", 1, `^$`, `^instance "me" not found or not running\n$`},
	} {
		r := f.run(t, tc.key, tc.user, tc.cmd)
		if r.code != tc.code || !regexp.MustCompile(tc.stdout).MatchString(r.stdout) || !regexp.MustCompile(tc.stderr).MatchString(r.stderr) {
			t.Errorf("%s@ %q with key %s: status %d, stdout %q, stderr %q", tc.user, tc.cmd, tc.key, r.code, r.stdout, r.stderr)
		}
	}
}

// TestCommandInstances: ssh HOST instances lists what the key may attach
// to, with each one's session state; an attach to a user name that is no
// instance says how to find them.
func TestCommandInstances(t *testing.T) {
	f := newFixture(t, nil)
	a := f.attach(t, "admin", "web1", 80, 24)
	a.pid()
	r := f.run(t, "admin", gatewayUser, "instances")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) < 2 || !regexp.MustCompile(`^INSTANCE +STATE +SESSION$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`(?m)^web1 +1 attached +[0-9a-f]{16}$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^db1 +no session +-$`).MatchString(r.stdout) {
		t.Fatalf("instances: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, "web", gatewayUser, "instances"); r.code != 0 || regexp.MustCompile(`(?m)^db1 `).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^web1 `).MatchString(r.stdout) {
		t.Fatalf("instances for a web* key: status %d, stdout %q", r.code, r.stdout)
	}
	if r := f.run(t, "watcher", gatewayUser, "instances"); r.code != 0 || !strings.Contains(r.stdout, "web1") {
		t.Fatalf("instances for a read-only key: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// ssh -t HOST as user "me": no such instance, and the way to find one.
	m := f.attach(t, "admin", "me", 80, 24)
	if code := m.wait(); code != 1 || !strings.Contains(m.errOut.String(), sessions.NotFoundMessage("me")) || !strings.Contains(m.errOut.String(), "ssh termgate@HOST instances") {
		t.Fatalf("attach as me: status %d, stderr %q", code, m.errOut.String())
	}
}

func TestClosestVerb(t *testing.T) {
	for word, want := range map[string]string{
		"resett": "reset", "RESET": "reset", "lsit": "list", "instnaces": "instances", "logs": "log",
		"uptime": "", "true": "", "ls": "", "sh": "", "bash": "", "frobnicate": "",
	} {
		if got := closestVerb(word); got != want {
			t.Errorf("closestVerb(%q) = %q, want %q", word, got, want)
		}
	}
}
