package sshd

import "testing"

// TestAcceptEnvPatterns: --accept-env's patterns, TERM always, TERMGATE_
// never (not even through a glob), and no name a shell could not use.
func TestAcceptEnvPatterns(t *testing.T) {
	pats, err := ParseAcceptEnv("LANG LC_*, FOO  GIT_*")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"LANG": true, "LC_ALL": true, "FOO": true, "GIT_AUTHOR_NAME": true, "TERM": true,
		"FOOD": false, "LD_PRELOAD": false, "lang": false, "": false, "A-B": false, "1X": false,
	} {
		if got := acceptEnv(pats, name); got != want {
			t.Errorf("%q: accepted %v, want %v", name, got, want)
		}
	}
	star, err := ParseAcceptEnv("*")
	if err != nil {
		t.Fatal(err)
	}
	if acceptEnv(star, "TERMGATE_SESSION") || !acceptEnv(star, "ANYTHING") {
		t.Error(`"*" must accept any name but the TERMGATE_ markers`)
	}
	for _, bad := range []string{"TERMGATE_*", "TERMGATE_SESSION", "[x"} {
		if _, err := ParseAcceptEnv(bad); err == nil {
			t.Errorf("ParseAcceptEnv(%q) accepted", bad)
		}
	}
	if none, err := ParseAcceptEnv(""); err != nil || none == nil || acceptEnv(none, "LANG") {
		t.Errorf(`"" must accept nothing (but TERM): %v %v`, none, err)
	}
}
