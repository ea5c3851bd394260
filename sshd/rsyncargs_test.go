package sshd

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestParseRsyncLine: the lines rsync's client sends split as a shell
// would split them; other lines are not rsync's; what only a shell could
// give meaning to, and daemon mode, are refused.
func TestParseRsyncLine(t *testing.T) {
	for _, tc := range []struct {
		line   string
		args   []string
		sender bool
		paths  []string
	}{
		{"rsync --server -logDtpre.iLsfxCIvu . /tmp/up/", []string{"--server", "-logDtpre.iLsfxCIvu", ".", "/tmp/up/"}, false, []string{"/tmp/up/"}},
		{"rsync --server --sender -logDtpre.iLsfxCIvu . rel/src", []string{"--server", "--sender", "-logDtpre.iLsfxCIvu", ".", "rel/src"}, true, []string{"rel/src"}},
		// rsync 3.2.4+ escapes a remote path's specials with backslashes.
		{`rsync --server --sender -vlogDtpre.iLsfxCIvu . a\ b/ c\;d "e f" 'g$h'`, nil, true, []string{"a b/", "c;d", "e f", "g$h"}},
		{"rsync --server --sender -e.LsfxC --remove-source-files . x", nil, true, []string{"x"}},
		{"rsync --server . .", nil, false, []string{"."}},
	} {
		r, err := parseRsyncLine(tc.line)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if tc.args != nil && !slices.Equal(r.args, tc.args) {
			t.Errorf("%q: args %q, want %q", tc.line, r.args, tc.args)
		}
		if r.sender != tc.sender || !slices.Equal(r.paths, tc.paths) {
			t.Errorf("%q: sender %v paths %q, want %v %q", tc.line, r.sender, r.paths, tc.sender, tc.paths)
		}
		if r.deletes != strings.Contains(tc.line, "--remove-source-files") {
			t.Errorf("%q: deletes %v", tc.line, r.deletes)
		}
	}
	for _, line := range []string{"rsync --version", "ls", "/usr/bin/rsync --server . x", "rsync"} {
		if _, err := parseRsyncLine(line); !errors.Is(err, errNotRsync) {
			t.Errorf("%q: %v, want errNotRsync", line, err)
		}
	}
	for _, line := range []string{
		"rsync --server --sender . x; id", "rsync --server . x | cat", "rsync --server . $HOME",
		"rsync --server . `id`", "rsync --server . \"$(id)\"", "rsync --server . x &", "rsync --server . <x",
		"rsync --server --sender . *.txt", "rsync --server --sender . a?", "rsync --server --daemon .",
		"rsync --server --config=/etc/x . y", "rsync --server -a x", "rsync --server . 'open", `rsync --server . "open`,
		`rsync --server . x\`, "rsync --server . x #comment", "rsync --server .",
	} {
		if _, err := parseRsyncLine(line); err == nil || errors.Is(err, errNotRsync) || !strings.HasPrefix(err.Error(), "rsync: ") {
			t.Errorf("%q: %v, want a refusal", line, err)
		}
	}
	if _, err := parseRsyncLine("rsync --server . " + strings.Repeat("x", maxRsyncLine)); err == nil {
		t.Error("an over-long line was accepted")
	}
}

// FuzzSplitWords: any line splits or is refused, never panics; a word
// never holds what the shell would have acted on unquoted.
func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{`a\ b "c d" 'e'`, `"\$x"`, "a\\\nb", `"`, `\`, "x;y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := splitWords(line)
		if err != nil {
			return
		}
		for _, w := range words {
			if w == "" && !strings.ContainsAny(line, `'"`) {
				t.Fatalf("%q: an empty word without quotes", line)
			}
		}
	})
}
