package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestHelpGroupsCoverEveryFlag: every visible flag is in exactly one
// --help group, and every grouped name is a flag.
func TestHelpGroupsCoverEveryFlag(t *testing.T) {
	fs := newFlagSet(&options{}, &sizeFlags{})
	seen := map[string]string{}
	for _, g := range flagGroups {
		for _, name := range g.flags {
			if fs.Lookup(name) == nil {
				t.Errorf("group %q names %q, which is no flag", g.title, name)
			}
			if prev, ok := seen[name]; ok {
				t.Errorf("--%s is in %q and %q", name, prev, g.title)
			}
			seen[name] = g.title
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := seen[f.Name]; !ok && !f.Hidden {
			t.Errorf("--%s is in no help group (flagGroups)", f.Name)
		}
	})
}

// TestCommandLineErrorsSuggestTheFix: pflag's errors become what to type.
func TestCommandLineErrorsSuggestTheFix(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--idle-timeout", "5"}, `--idle-timeout "5" is not a duration: it needs a unit; use 5s, 5m or a duration such as 30m`},
		{[]string{"--idle-timeout=soon"}, `--idle-timeout "soon" is not a duration; use one such as 30m`},
		{[]string{"--idle"}, "unknown flag --idle; did you mean --idle-timeout?"},
		{[]string{"--idle-timout", "5m"}, "unknown flag --idle-timout; did you mean --idle-timeout?"},
		{[]string{"--recrod-dir", "/r"}, "did you mean --record-dir?"},
		{[]string{"--zzzzzz"}, "unknown flag --zzzzzz"},
		{[]string{"-idle-timeout", "5m"}, "unknown flag -idle-timeout: long flags take two dashes, --idle-timeout"},
		{[]string{"-x"}, "unknown flag -x: the one short flag is -h"},
		{[]string{"--ssh-addr"}, "--ssh-addr needs a value: --ssh-addr ADDR"},
		{[]string{"--durable", "false"}, "a switch takes true or false after an =, such as --durable=false"},
		{[]string{"idle-timeout", "5m"}, "did you mean --idle-timeout?"},
		{[]string{"--durable=maybe"}, `--durable "maybe" is not true or false`},
		{[]string{"--log-level", "loud"}, "use debug, info, warn or error"},
		{[]string{"--log-format", "xml"}, "use auto, text or json"},
	} {
		_, err := parseFlags(tt.args, env(nil))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseFlags(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
	if _, err := parseFlags([]string{"--zzzzzz"}, env(nil)); err != nil && strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a far name got a suggestion: %v", err)
	}
}

// TestHelpAndVersionComeFirst: --help and --version answer even when the
// environment holds a bad value, and neither is read from it.
func TestHelpAndVersionComeFirst(t *testing.T) {
	bad := env(map[string]string{"TERMGATE_IDLE_TIMEOUT": "soon", "TERMGATE_HELP": "true"})
	if _, err := parseFlags([]string{"-h"}, bad); err != errHelp {
		t.Errorf("-h: %v", err)
	}
	if o, err := parseFlags([]string{"--version"}, bad); err != nil || !o.version {
		t.Errorf("--version: %v", err)
	}
	if _, err := parseFlags(nil, env(map[string]string{"TERMGATE_HELP": "true"})); err != nil {
		t.Errorf("TERMGATE_HELP is no setting: %v", err)
	}
}

// TestManPageIsCurrent: docs/termgate.1 is what `make man` writes now.
func TestManPageIsCurrent(t *testing.T) {
	if version != "dev" {
		t.Skip("a stamped build writes its version into the page")
	}
	committed, err := os.ReadFile("../../docs/termgate.1")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeMan(&b, newFlagSet(&options{}, &sizeFlags{}))
	if b.String() != string(committed) {
		t.Error("docs/termgate.1 is stale: run make man")
	}
}
