package doclinks

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, two levels up from this package.
const root = "../.."

// link matches an inline Markdown link or image: [text](target) with an
// optional title. Reference-style links are not used in these files.
var link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// anchorTag matches an explicit <a id="..."> target.
var anchorTag = regexp.MustCompile(`<a id="([^"]+)">`)

// codeSpan matches inline code, whose brackets are not links.
var codeSpan = regexp.MustCompile("`[^`]*`")

func docFiles(t *testing.T) []string {
	files := []string{"README.md", "SECURITY.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	return files
}

// scan returns a file's links (outside fenced code) and the anchors its
// headings and <a id> tags define, as GitHub makes them.
func scan(t *testing.T, rel string) (links []string, anchors map[string]bool) {
	f, err := os.Open(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	anchors = map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range anchorTag.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if strings.HasPrefix(line, "#") {
			s := slug(strings.TrimLeft(line, "#"))
			if n := seen[s]; n > 0 {
				anchors[s+"-"+itoa(n)] = true
			} else {
				anchors[s] = true
			}
			seen[s]++
		}
		for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			links = append(links, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return links, anchors
}

// slug is GitHub's heading anchor: lower case, letters, digits, '-' and
// '_' kept, spaces turned into '-', everything else dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestDocLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	links := map[string][]string{}
	for _, rel := range docFiles(t) {
		links[rel], anchors[rel] = scan(t, rel)
	}
	checked := 0
	for rel, ls := range links {
		for _, target := range ls {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(target, "#")
			file := rel // a bare #anchor is in the same file
			if path != "" {
				file = filepath.Clean(filepath.Join(filepath.Dir(rel), path))
				if file == ".." || strings.HasPrefix(file, "../") {
					t.Errorf("%s: link %q leaves the repository (a clone does not have it)", rel, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("%s: link %q: %v", rel, target, err)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				continue
			}
			a, ok := anchors[file]
			if !ok {
				_, a = scan(t, file)
				anchors[file] = a
			}
			if !a[frag] {
				t.Errorf("%s: link %q: no heading #%s in %s", rel, target, frag, file)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the scanner is broken")
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		" Observers (read-only) and who is attached":                "observers-read-only-and-who-is-attached",
		" Deploying termgate on the cluster (`deploy/kubernetes/`)": "deploying-termgate-on-the-cluster-deploykubernetes",
		" The page's reconnect":                                     "the-pages-reconnect",
		" Limits that are fields, not flags":                        "limits-that-are-fields-not-flags",
		" A. Unauthenticated network peer":                          "a-unauthenticated-network-peer",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
