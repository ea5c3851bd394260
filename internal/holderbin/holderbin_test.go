package holderbin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFindsTheBinaryOrSaysHowToBuildIt(t *testing.T) {
	if len(embedded) > 0 {
		t.Skip("built with the holder embedded")
	}
	dir := t.TempDir()
	exe := func() (string, error) { return filepath.Join(dir, "termgate"), nil }
	if _, err := load("", exe); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("no binary anywhere: %v, want an error saying to use make build", err)
	}
	elf := []byte("\x7fELF and the rest")
	if err := os.WriteFile(filepath.Join(dir, FileName), elf, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := load("", exe)
	if err != nil || string(b.Data) != string(elf) || len(b.Hash) != 16 {
		t.Fatalf("next to the executable: %+v, %v", b, err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := load(other, exe); err == nil || !strings.Contains(err.Error(), "ELF") {
		t.Fatalf("a script named by the environment: %v, want refused", err)
	}
	if _, err := load(filepath.Join(dir, "missing"), exe); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file named by the environment: %v", err)
	}
	if New([]byte("a"), "").Hash == New([]byte("b"), "").Hash {
		t.Fatal("different builds share a hash")
	}
}
