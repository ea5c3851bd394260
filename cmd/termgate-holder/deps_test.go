package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The in-instance binary links no registry: of termgate's packages only
// internal/..., holder and backend/procmark (whose own imports are the
// standard library's and internal/names').
func TestDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	const mod = "github.com/termgate/termgate/"
	for _, tt := range []struct {
		pkg     string
		allowed func(string) bool
	}{
		{".", func(p string) bool {
			return strings.HasPrefix(p, mod+"internal/") || p == mod+"holder" || p == mod+"backend/procmark" || p == mod+"cmd/termgate-holder"
		}},
		{"../../backend/procmark", func(p string) bool { return p == mod+"backend/procmark" || p == mod+"internal/names" }},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", tt.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if tt.pkg != "." && !strings.HasPrefix(p, mod) { // procmark: the standard library only
				t.Errorf("%s depends on %s", tt.pkg, p)
			} else if strings.HasPrefix(p, mod) && !tt.allowed(p) {
				t.Errorf("%s depends on %s", tt.pkg, p)
			}
		}
	}
}
