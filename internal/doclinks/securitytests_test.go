package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testRef is a test cell of SECURITY.md: `package/file_test.go TestName`.
var testRef = regexp.MustCompile(`^(\S+_test\.go) ((?:Test|Fuzz)[A-Za-z0-9_]+)$`)

// testName finds a test or fuzz function's name inside a code span.
var testName = regexp.MustCompile(`\b(?:Test|Fuzz)[A-Z0-9_][A-Za-z0-9_]*`)

// TestSecurityTestsExist: every test SECURITY.md names, as
// `package/file_test.go TestName`, is a function of that file, so a
// renamed or deleted test breaks `make test` rather than a promise.
func TestSecurityTestsExist(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, span := range codeSpan.FindAllString(string(doc), -1) {
		span = strings.Trim(span, "`")
		if !testName.MatchString(span) {
			continue
		}
		m := testRef.FindStringSubmatch(span)
		if m == nil {
			t.Errorf("SECURITY.md: %q: name a test as `package/file_test.go TestName`", span)
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, m[1]))
		if err != nil {
			t.Errorf("SECURITY.md: %q: %v", span, err)
			continue
		}
		if !regexp.MustCompile(`(?m)^func ` + m[2] + `\(`).Match(src) {
			t.Errorf("SECURITY.md: %q: no func %s in %s", span, m[2], m[1])
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no test named in SECURITY.md: the scanner is broken")
	}
	t.Logf("%d test references checked", checked)
}
