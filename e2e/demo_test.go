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
	write(filepath.Join(tree, "scripts", "demo-gateway.sh"), demoScript(t, root, "demo-gateway.sh"))
	write(filepath.Join(tree, "scripts", "ensure-docker.sh"), "true\n")
	write(filepath.Join(tree, "scripts", "test-image.sh"), "true\n")
	write(filepath.Join(tree, "bin", "termgate"), record)
	write(filepath.Join(stubs, "make"), record)
	// docker inspect finds no web1: the script starts it.
	write(filepath.Join(stubs, "docker"), record+"[ \"$1\" = inspect ] && exit 1\nexit 0\n")
	write(filepath.Join(tree, ".termgate", "authorized_keys"), "")
	cmd := exec.Command("bash", filepath.Join(tree, "scripts", "demo.sh"))
	// An earlier demo's host key in known_hosts: this demo makes a new
	// one, and says what ssh will answer and how to forget the old one.
	home := t.TempDir()
	write(filepath.Join(home, ".ssh", "known_hosts"), "[localhost]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHh8bnlZZ4yAbVbVZcR4N1kk6Vt3qQ1LGTHgKjmxJw0J\n")
	cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	// It says what it does and what it created, and how to undo it.
	for _, want := range []string{"demo: building bin/termgate (", "demo: created the container web1 (label termgate.demo=1)", "make demo-clean removes",
		"REMOTE HOST IDENTIFICATION HAS CHANGED, run ssh-keygen -R '[localhost]:2222'"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo.sh did not say %q:\n%s", want, out)
		}
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
	// Loopback, as the package: the demo's root shell in web1 is not
	// offered to the network the laptop is on (DEMO_ADDR opens it).
	if !strings.Contains(gateway, "--ssh-addr 127.0.0.1:2222 --http-addr 127.0.0.1:8080") {
		t.Errorf("the demo gateway does not listen on loopback: %q", gateway)
	}
	if !strings.Contains(gateway, "--record-dir .termgate/recordings") {
		t.Errorf("the demo gateway records nothing: %q", gateway)
	}
}

// TestDemoClean: make demo-clean removes the demo's containers (by label),
// its state and the SSH key the demo generated, and never a key the user
// had.
func TestDemoClean(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "demo-clean.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, generated := range []bool{true, false} {
		tree, stubs, home := t.TempDir(), t.TempDir(), t.TempDir()
		calls := filepath.Join(t.TempDir(), "calls")
		write := func(path, body string, mode os.FileMode) {
			t.Helper()
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(body), mode); err != nil {
				t.Fatal(err)
			}
		}
		write(filepath.Join(tree, "scripts", "demo-clean.sh"), string(script), 0o755)
		write(filepath.Join(tree, "scripts", "demo-gateway.sh"), demoScript(t, root, "demo-gateway.sh"), 0o644)
		write(filepath.Join(stubs, "docker"), "#!/bin/sh\necho \"docker $*\" >> "+calls+"\n[ \"$1\" = ps ] && echo c0ffee\nexit 0\n", 0o755)
		key := filepath.Join(home, ".ssh", "id_ed25519")
		write(key, "private", 0o600)
		write(key+".pub", "public", 0o644)
		write(filepath.Join(tree, ".termgate", "ssh_host_ed25519_key"), "x", 0o600)
		if generated {
			write(filepath.Join(tree, ".termgate", "demo-generated-key"), key+"\n", 0o600)
		}
		cmd := exec.Command("bash", filepath.Join(tree, "scripts", "demo-clean.sh"))
		cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"), "HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("demo-clean.sh: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(calls)
		if !strings.Contains(string(b), "docker ps -aq --filter label=termgate.demo=1") || !strings.Contains(string(b), "docker rm -f c0ffee") {
			t.Errorf("demo-clean's docker calls: %q", b)
		}
		if _, err := os.Stat(filepath.Join(tree, ".termgate")); !os.IsNotExist(err) {
			t.Errorf("./.termgate is still there: %v", err)
		}
		_, err := os.Stat(key)
		if generated && !os.IsNotExist(err) {
			t.Errorf("the key the demo generated is still there")
		}
		if !generated && err != nil {
			t.Errorf("the user's own key was removed: %v", err)
		}
	}
}

// demoScript is scripts/NAME of the module at root.
func demoScript(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
