package doclinks

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notOurs are the messages docs/TROUBLESHOOTING.md quotes that other
// programs print, and who prints them.
var notOurs = map[string]string{
	"WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!": "OpenSSH",
	"Permission denied (publickey)":                    "OpenSSH",
	"sh: ~.: not found":                                "the instance's shell",
	"~.":                                               "a key sequence, no message",
	"421 Misdirected Request":                          "HTTP's status line (net/http)",
	`"durable": false`:                                 "a field of GET /api/sessions",
}

// placeholder matches what a quoted message holds in place of the words a
// real one has: an ellipsis, a quoted name ("web1"), a number N, a file
// or socket path.
var placeholder = regexp.MustCompile(`…|"[^"]*"|\bN\b|\S+\.yaml\b|unix://\S+`)

// quoted matches a "double-quoted" phrase of a heading outside its code.
var quoted = regexp.MustCompile(`"([^"]+)"`)

// TestTroubleshootingHeadingsQuoteRealMessages: every message a heading of
// docs/TROUBLESHOOTING.md quotes (in code, or in double quotes) is one the
// code prints: the words between its placeholders are in a Go or page
// source file. Users search that page for the message they see; a
// reworded message must take its heading along.
func TestTroubleshootingHeadingsQuoteRealMessages(t *testing.T) {
	corpus := sourceCorpus(t)
	f, err := os.Open(filepath.Join(root, "docs", "TROUBLESHOOTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checked := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		h, ok := strings.CutPrefix(sc.Text(), "## ")
		if !ok {
			continue
		}
		var msgs []string
		for _, span := range codeSpan.FindAllString(h, -1) {
			msgs = append(msgs, strings.Trim(span, "`"))
		}
		for _, m := range quoted.FindAllStringSubmatch(codeSpan.ReplaceAllString(h, ""), -1) {
			msgs = append(msgs, m[1])
		}
		for _, msg := range msgs {
			if _, ok := notOurs[msg]; ok {
				continue
			}
			checked++
			words := 0
			for _, frag := range placeholder.Split(msg, -1) {
				frag = strings.TrimSpace(frag)
				if len(frag) < 4 {
					continue
				}
				words++
				if !strings.Contains(corpus, frag) {
					t.Errorf("docs/TROUBLESHOOTING.md heading %q: %q is in no source file: quote the message the code prints", h, frag)
				}
			}
			if words == 0 {
				t.Errorf("docs/TROUBLESHOOTING.md heading %q: %q has no words to check", h, msg)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("only %d messages checked: has the page's format changed?", checked)
	}
}

// sourceCorpus is every non-test Go file and the page's sources, with Go's
// escaped quotes as the user sees them.
func sourceCorpus(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "dist", ".git", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.go") || !(strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".js")) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.WriteString(strings.ReplaceAll(string(data), `\"`, `"`))
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
