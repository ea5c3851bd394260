package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A typo in a token line's options must never leave the token working
// without the limit its line meant to set (issue 9 item 6: `TOKEN
// instance=web*`, `TOKEN Instances=web*` and `TOKEN "instances=web*"` each
// loaded as an unrestricted token named after the typo, with no warning).
func TestTokenOptionTyposAreRefused(t *testing.T) {
	const tok = "0123456789abcdefXYZ"
	tests := []struct {
		rest string // after the token
		want string // in the warning
	}{
		{"instance=web*", `unknown option "instance=" (did you mean instances=`},
		{"Instances=web*", `unknown option "Instances=" (did you mean instances=`},
		{"INSTANCES=web*", `unknown option "INSTANCES="`},
		{`"instances=web*"`, `unknown option "\"instances=" (did you mean instances=`},
		{`'instances=web*'`, `unknown option "'instances="`},
		{"ops instance=web*", `unknown option "instance="`},
		{`ops "instances=web*"`, `unknown option "\"instances="`},
		{"instances=web* Instances=db", `unknown option "Instances="`},
		{"name=ops", `unknown option "name=" (the only options are instances=PAT,..., read-only, files=download and logins=LOGIN,...; a NAME may not contain '=')`},
		{"ops=web", `unknown option "ops="`},
		{"read-only=yes", `unknown option "read-only="`},
		{"instances= web*", "instances= is empty"},
		{`instances="web*`, "instances= has a stray quote"},
		{`instances=web*"`, "instances= has a stray quote"},
		{`instances='web*'`, "instances= has a stray quote"},
		{`instances=""`, "instances= is empty"},
		{`"ops"`, `unexpected quote in "\"ops\""`},
		{`ops 'x'`, `unexpected quote in "'x'"`},
		{"instances", "is spelt like an option"},
		{"ops instance", "is spelt like an option"},
		{"readonly", "is spelt like an option"},
		{"Read-Only", "is spelt like an option"},
		{"ops read_only", "is spelt like an option"},
		{"READ-ONLY", "is spelt like an option"},
		{"web*", `the NAME "web*" has a pattern or list character`},
		{"web1,web2", `the NAME "web1,web2" has a pattern or list character`},
		{"ops db[12]", "has a pattern or list character"},
		{"ops read-only read-only", "read-only given twice"},
		{"instances=a instances=b", "instances= given twice"},
		{"ops web", `unexpected "web" after the name "ops"`},
	}
	for _, tt := range tests {
		t.Run(tt.rest, func(t *testing.T) {
			// A later line with the same token and no option must not
			// lift the refusal either.
			data := "# tokens\n" + tok + " " + tt.rest + "\n" + tok + "\n"
			tk, warnings := ParseTokens([]byte(data))
			if id, ok := tk.Check(tok); ok {
				t.Fatalf("token on a refused line works: %+v (warnings %q)", id, warnings)
			}
			if tk.Len() != 0 {
				t.Errorf("Len = %d, want 0", tk.Len())
			}
			if len(warnings) != 2 {
				t.Fatalf("warnings = %q, want the refused line and its repeat", warnings)
			}
			if !strings.HasPrefix(warnings[0], "line 2: refused: ") || !strings.Contains(warnings[0], tt.want) ||
				!strings.Contains(warnings[0], "does not work until you fix the line (format: TOKEN [NAME] [instances=PAT,...] [read-only] [files=download] [logins=LOGIN,...])") {
				t.Errorf("warning %q, want line 2 refused with %q and what to do", warnings[0], tt.want)
			}
			if !strings.HasPrefix(warnings[1], "line 3: skipped: same token as line 2, which is refused: fix line 2") {
				t.Errorf("warning %q, want line 3 skipped as a repeat of refused line 2", warnings[1])
			}
			for _, w := range warnings {
				if strings.Contains(w, tok) {
					t.Errorf("warning %q shows the token", w)
				}
			}
		})
	}
}

func TestTokenLineSyntax(t *testing.T) {
	const tok = "0123456789abcdefXYZ"
	tests := []struct {
		rest      string
		name      string
		instances []string
		readOnly  bool
	}{
		{"", "token-1", nil, false},
		{"ops", "ops", nil, false},
		{"ops instances=web-*", "ops", []string{"web-*"}, false},
		{`instances="web-*,db" ops`, "ops", []string{"web-*", "db"}, false},
		{"ops instances=web-* read-only", "ops", []string{"web-*"}, true},
		{"read-only", "token-1", nil, true},
		{"read-only ops instances=[!x]*", "ops", []string{"[^x]*"}, true},
		{"ops@example.com", "ops@example.com", nil, false},
		{"équipe-1", "équipe-1", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.rest, func(t *testing.T) {
			tk, warnings := ParseTokens([]byte(tok + " " + tt.rest + "\n"))
			id, ok := tk.Check(tok)
			if !ok || id.Name != tt.name || g(id).ReadOnly != tt.readOnly || strings.Join(g(id).Instances, ",") != strings.Join(tt.instances, ",") {
				t.Fatalf("Check = %+v, %v; want name %q, instances %q, read-only %v (warnings %q)", id, ok, tt.name, tt.instances, tt.readOnly, warnings)
			}
			if len(warnings) != 0 { // read-only is enforced: no "not enforced" warning
				t.Errorf("warnings = %q", warnings)
			}
		})
	}

	// '=' inside the token itself (base64 padding) is part of the token.
	tk, warnings := ParseTokens([]byte("QUJDREVGR0hJSktMTU5PUA== ops instances=db\n"))
	if id, ok := tk.Check("QUJDREVGR0hJSktMTU5PUA=="); !ok || id.Name != "ops" || !id.May("db") || id.May("web") || len(warnings) != 0 {
		t.Errorf("padded token: %+v %v %q", id, ok, warnings)
	}
	// A token pasted where the NAME goes is never shown.
	const second = "SECONDsecondSECONDsecond="
	_, warnings = ParseTokens([]byte(tok + " ops " + second + "\n" + tok + " " + second + "x\n"))
	for _, w := range warnings {
		if strings.Contains(w, "SECOND") {
			t.Errorf("warning %q shows a token-like field", w)
		}
	}
	// The token itself must not look like an option or be quoted.
	for _, line := range []string{"read-only ops", `"0123456789abcdefXYZ" ops`, `'0123456789abcdefXYZ'`} {
		tk, warnings := ParseTokens([]byte(line))
		if tk.Len() != 0 || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "line 1: refused: the ") {
			t.Errorf("%q: Len %d, warnings %q", line, tk.Len(), warnings)
		}
	}
}

// A refused line is reported with the file and line, and the rest of the
// file still loads.
func TestLoadTokensReportsRefusedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api_token")
	data := "0123456789abcdefXYZ ops instances=web*\nABCDEFGHIJKLMNOPQRS dev instance=web*\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	tk, warnings, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tk.Check("ABCDEFGHIJKLMNOPQRS"); ok {
		t.Error("the token of the refused line works")
	}
	if id, ok := tk.Check("0123456789abcdefXYZ"); !ok || id.Name != "ops" {
		t.Errorf("the good line's token: %+v %v", id, ok)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], path+": line 2: refused: unknown option \"instance=\"") {
		t.Errorf("warnings = %q", warnings)
	}
}
