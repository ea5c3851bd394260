package keys

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	data := strings.Join([]string{
		"# tokens",
		"",
		"s3cr3t ci instances=web-*",         // 3: short, named, limited
		"0123456789abcdefghij",              // 4: token-2
		"  AAAAAAAAAAAAAAAAAAAAAAAA  ops  ", // 5: named, padded
		`BBBBBBBBBBBBBBBBBBBB instances="db,cache?" deploy`, // 6: instances before name
		"s3cr3t dup",                                   // 7: duplicate of line 3
		"CCCCCCCCCCCCCCCCCCCC a b",                     // 8: two names
		"instances=web",                                // 9: no token
		"DDDDDDDDDDDDDDDDDDDD instances=web/x",         // 10: bad pattern
		"EEEEEEEEEEEEEEEEEEEE instances=a instances=b", // 11: twice
		"FFFFFFFFFFFF\x01FFFFFFF",                      // 12: control character
		"GGGGGGGGGGGGGGGGGGGG\r",                       // 13: CRLF, token-5
	}, "\n")
	tk, warnings := ParseTokens([]byte(data))
	if tk.Len() != 5 {
		t.Errorf("Len = %d, want 5", tk.Len())
	}
	wantWarnings := []string{
		"line 3 (ci): the token is short (6 characters)",
		"line 7: skipped: same token as line 3",
		`line 8: refused: unexpected "b" after the name "a"`,
		"line 9: refused: the line starts with an option instead of a token",
		"line 10: refused: instances= pattern",
		"line 11: refused: instances= given twice",
		"line 12: refused: the token has characters other than printable ASCII",
	}
	if len(warnings) != len(wantWarnings) {
		t.Errorf("warnings = %q", warnings)
	}
	for i, w := range wantWarnings {
		if i < len(warnings) && !strings.HasPrefix(warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, warnings[i], w)
		}
	}
	for _, w := range warnings {
		if strings.Contains(w, "s3cr3t") || strings.Contains(w, "CCCC") {
			t.Errorf("warning %q quotes a token", w)
		}
	}

	tests := []struct {
		presented string
		ok        bool
		name      string
		may       string // an instance it may use ("" = skip)
		mayNot    string
	}{
		{"s3cr3t", true, "ci", "web-1", "db"},
		{"0123456789abcdefghij", true, "token-2", "anything", ""},
		{"AAAAAAAAAAAAAAAAAAAAAAAA", true, "ops", "", ""},
		{"BBBBBBBBBBBBBBBBBBBB", true, "deploy", "cache1", "db1"},
		{"GGGGGGGGGGGGGGGGGGGG", true, "token-5", "", ""},
		{"", false, "", "", ""},
		{"s3cr3", false, "", "", ""},
		{"s3cr3t ", false, "", "", ""},
		{"S3CR3T", false, "", "", ""},
		{"CCCCCCCCCCCCCCCCCCCC", false, "", "", ""},
		{"instances=web", false, "", "", ""},
	}
	for _, tt := range tests {
		id, ok := tk.Check(tt.presented)
		if ok != tt.ok || id.Name != tt.name {
			t.Errorf("Check(%q) = %+v, %v; want %q, %v", tt.presented, id, ok, tt.name, tt.ok)
			continue
		}
		if tt.may != "" && !id.May(tt.may) {
			t.Errorf("Check(%q): may not use %q", tt.presented, tt.may)
		}
		if tt.mayNot != "" && id.May(tt.mayNot) {
			t.Errorf("Check(%q): may use %q", tt.presented, tt.mayNot)
		}
	}
}

func TestTokensNil(t *testing.T) {
	var tk *Tokens
	if _, ok := tk.Check("x"); ok || tk.Len() != 0 {
		t.Fatal("nil Tokens accepted a token")
	}
	if _, ok := (&Tokens{}).Check("x"); ok {
		t.Fatal("zero Tokens accepted a token")
	}
}

func TestLoadOrCreateTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "api_token")
	tk, created, err := LoadOrCreateTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(created)
	if err != nil || len(raw) != 32 {
		t.Fatalf("created token %q is not 32 bytes of URL-safe base64: %v", created, err)
	}
	if id, ok := tk.Check(created); !ok || id.Name != "token-1" || len(g(id).Instances) != 0 {
		t.Fatalf("Check(created) = %+v, %v", id, ok)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != created+"\n" {
		t.Fatalf("file holds %q, want the token and a newline (%v)", data, err)
	}
	assertMode(t, path, 0o600)
	assertMode(t, filepath.Dir(path), 0o700|os.ModeDir)

	tk2, created2, err := LoadOrCreateTokens(path)
	if err != nil || created2 != "" {
		t.Fatalf("second call: created %q, err %v", created2, err)
	}
	if _, ok := tk2.Check(created); !ok {
		t.Fatal("second call lost the token")
	}

	other, _, err := LoadOrCreateTokens(filepath.Join(t.TempDir(), "api_token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Check(created); ok {
		t.Fatal("two generated token files accept the same token")
	}
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	tk, warnings, err := LoadTokens(filepath.Join(dir, "none"))
	if err != nil || tk.Len() != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "does not exist") {
		t.Fatalf("missing: %v %q %v", tk, warnings, err)
	}
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte("0123456789abcdefXYZ ci\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, warnings, err = LoadTokens(path)
	if err != nil || tk.Len() != 1 || len(warnings) != 1 || !strings.HasPrefix(warnings[0], path+": is readable by group or others") {
		t.Fatalf("world-readable: %v %q %v", tk, warnings, err)
	}
	if _, _, err := LoadTokens(dir); err == nil {
		t.Fatal("a directory loaded")
	}
}

func TestNewTokenDiffers(t *testing.T) {
	a, err1 := NewToken()
	b, err2 := NewToken()
	if err1 != nil || err2 != nil || a == b || len(a) != 43 {
		t.Fatalf("NewToken: %q %v, %q %v", a, err1, b, err2)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModePerm | os.ModeDir); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

// Check scans every entry without stopping; when two entries match (ParseTokens
// never builds such a set), the first one must win.
func TestCheckKeepsFirstMatch(t *testing.T) {
	a, _ := ParseTokens([]byte("0123456789abcdefXYZ first\nzzzzzzzzzzzzzzzzzzzz other"))
	b, _ := ParseTokens([]byte("0123456789abcdefXYZ second"))
	tk := &Tokens{entries: append(append([]tokenEntry{}, a.entries...), b.entries...)}
	if id, ok := tk.Check("0123456789abcdefXYZ"); !ok || id.Name != "first" {
		t.Fatalf("Check = %+v, %v; want first", id, ok)
	}
	tk = &Tokens{entries: append(append([]tokenEntry{}, b.entries...), a.entries...)}
	if id, ok := tk.Check("0123456789abcdefXYZ"); !ok || id.Name != "second" {
		t.Fatalf("Check = %+v, %v; want second", id, ok)
	}
}
