package toolboxbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFindsTheBinaryOrSaysHowToBuildIt(t *testing.T) {
	if len(embedded) > 0 {
		t.Skip("built with the toolbox embedded")
	}
	dir := t.TempDir()
	exe := func() (string, error) { return filepath.Join(dir, "termgate"), nil }
	if _, err := load("", exe); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("no binary anywhere: %v, want an error saying to use make build", err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("\x7fELF..."), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := load("", exe); err != nil || len(b.Hash) != 16 {
		t.Fatalf("next to the executable: %+v, %v", b, err)
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := load(script, exe); err == nil || !strings.Contains(err.Error(), "ELF") {
		t.Fatalf("a script: %v, want refused", err)
	}
}
