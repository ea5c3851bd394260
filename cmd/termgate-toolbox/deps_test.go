package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps: the toolbox links the shell, u-root's core commands and the
// few modules they need, and nothing of the gateway's: it is copied into
// instances, so what it carries is kept to what it runs.
func TestDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := []string{"mvdan.cc/sh/v3/", "github.com/u-root/u-root/pkg/", "golang.org/x/sys/", "golang.org/x/term", "github.com/dustin/go-humanize"}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/termgate/termgate/cmd/termgate-toolbox" {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(p, a)
		}
		if !ok {
			t.Errorf("the toolbox depends on %s", p)
		}
	}
}
