package web

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/names"
)

// TestPageNameSyntaxIsTheContracts: the page checks instance names in
// JavaScript (app.js's NAME, the open-name field's pattern in index.html)
// before it calls the API; both must say what internal/names says, or the
// page refuses names the gateway serves (or offers ones it refuses).
func TestPageNameSyntaxIsTheContracts(t *testing.T) {
	js, err := os.ReadFile("src/app.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const NAME = /\^(.*)\$/;$`).FindSubmatch(js)
	if m == nil {
		t.Fatal("src/app.js: no `const NAME = /^...$/;` line")
	}
	if got := string(m[1]); got != names.Expr {
		t.Errorf("app.js NAME is /^%s$/, internal/names.Expr is %s", got, names.Expr)
	}

	html, err := os.ReadFile("src/index.html")
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`(?s)<input id="open-name"[^>]*\spattern="([^"]*)"`).FindSubmatch(html)
	if m == nil {
		t.Fatal(`src/index.html: no pattern="..." on the open-name field`)
	}
	// A pattern attribute is anchored by the browser and compiled with the
	// v flag, under which a literal '-' in a class is written '\-'.
	if got := strings.ReplaceAll(string(m[1]), `\-`, `-`); got != names.Expr {
		t.Errorf("index.html open-name pattern is %q, internal/names.Expr is %s", m[1], names.Expr)
	}
}

// TestPageSessionNameSyntaxIsTheContracts: the same for a named session's
// name (app.js's SESSION, the new-session field's pattern): the "+" tab
// refuses what the gateway would refuse, before anything is started.
func TestPageSessionNameSyntaxIsTheContracts(t *testing.T) {
	js, err := os.ReadFile("src/app.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const SESSION = /\^(.*)\$/;$`).FindSubmatch(js)
	if m == nil {
		t.Fatal("src/app.js: no `const SESSION = /^...$/;` line")
	}
	if got := string(m[1]); got != names.SessionExpr {
		t.Errorf("app.js SESSION is /^%s$/, internal/names.SessionExpr is %s", got, names.SessionExpr)
	}
	html, err := os.ReadFile("src/index.html")
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`(?s)<input id="new-session-name"[^>]*\spattern="([^"]*)"`).FindSubmatch(html)
	if m == nil {
		t.Fatal(`src/index.html: no pattern="..." on the new-session-name field`)
	}
	if got := strings.ReplaceAll(string(m[1]), `\-`, `-`); got != names.SessionExpr {
		t.Errorf("index.html new-session-name pattern is %q, internal/names.SessionExpr is %s", m[1], names.SessionExpr)
	}
}
