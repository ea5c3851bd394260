package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoKeepsToItsOwnContainers: issue 18 item 11. `make demo`
// (scripts/demo.sh) labels the example container it starts and runs the
// gateway with --instance-label of that label, so the demo gateway does
// not expose (nor sweep at start) every container on the Docker host. The
// script runs in a copy of its tree whose docker, make and bin/termgate
// only write down how they were called.
func TestDemoKeepsToItsOwnContainers(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tree, stubs := t.TempDir(), t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	record := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> " + calls + "\n"
	write(filepath.Join(tree, "scripts", "demo.sh"), string(script))
	write(filepath.Join(tree, "scripts", "ensure-docker.sh"), "true\n")
	write(filepath.Join(tree, "scripts", "test-image.sh"), "true\n")
	write(filepath.Join(tree, "bin", "termgate"), record)
	write(filepath.Join(stubs, "make"), record)
	// docker inspect finds no web1: the script starts it.
	write(filepath.Join(stubs, "docker"), record+"[ \"$1\" = inspect ] && exit 1\nexit 0\n")
	write(filepath.Join(tree, ".termgate", "authorized_keys"), "")
	cmd := exec.Command("bash", filepath.Join(tree, "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	var run, gateway string
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "docker run "):
			run = l
		case strings.HasPrefix(l, "termgate "):
			gateway = l
		}
	}
	label := ""
	if f := strings.Fields(gateway); len(f) > 0 {
		for i, a := range f[:len(f)-1] {
			if a == "--instance-label" {
				label = f[i+1]
			}
		}
	}
	if label == "" {
		t.Fatalf("the demo gateway runs without --instance-label: %q", gateway)
	}
	if !strings.Contains(run, "--label "+label+" ") {
		t.Fatalf("the demo container is not labelled %s: %q", label, run)
	}
}
