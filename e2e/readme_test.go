package e2e

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 22 item 8: every command in the README is exercised by a test or
// the demo check. readmeCommands finds them (the lines of its sh code
// blocks that start with a command, and the first column of its SSH
// table); readmeRules says, for each, which test runs it. A command no
// rule matches fails TestREADMECommandsAreExercised, so a command added to
// the README without a test to show it works cannot land.

// readmeCommand is one command as the README writes it.
type readmeCommand struct {
	line int    // README.md line
	text string // the command, its trailing "# comment" removed
}

// commandWords are the programs a README line can start with; other lines
// of a code block are output or a prompt (`/ # echo $$`).
var commandWords = regexp.MustCompile(`^(ssh|scp|sftp|curl|make|sudo|bash|docker|termgate|bin/termgate|ssh-keygen|source|man|[A-Z]+=\S+)( |$)`)

// tableCommand is a code span in the first column of a table row.
var tableCommand = regexp.MustCompile("^\\| `((?:ssh|scp|sftp) [^`]*)`")

func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []readmeCommand
	inSh, fenced := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			inSh = fenced && strings.TrimPrefix(line, "```") == "sh"
			continue
		}
		switch {
		case inSh:
			text := strings.TrimSpace(line)
			if i := strings.Index(text, "  #"); i >= 0 {
				text = strings.TrimSpace(text[:i])
			}
			if commandWords.MatchString(text) {
				cmds = append(cmds, readmeCommand{n, text})
			}
		case !fenced:
			if m := tableCommand.FindStringSubmatch(line); m != nil {
				cmds = append(cmds, readmeCommand{n, strings.ReplaceAll(m[1], `\|`, "|")})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// readmeRule says which test exercises the commands it matches: either
// TestREADMECommandsRun, which runs them as written against a gateway
// started as the demo starts it, or a named test elsewhere that drives
// the same command (an interactive attach in tmux, the demo script, the
// package install).
type readmeRule struct {
	match *regexp.Regexp
	test  string // the test function that exercises it
}

const runsHere = "TestREADMECommandsRun"

var readmeRules = []readmeRule{
	// Run as written by TestREADMECommandsRun (readme_run_test.go).
	{regexp.MustCompile(`^TOKEN=\$\(cat \.termgate/api_token\)$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 (localhost|HOST) (list|instances|whoami|help)$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 (localhost|HOST) reset (web1|INSTANCE)$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 INSTANCE@HOST reset$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 HOST (who|log) INSTANCE$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 HOST size INSTANCE \[COLSxROWS\|auto\]$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 HOST keep INSTANCE 8h\|off$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 web1@HOST uptime$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 INSTANCE@HOST CMD…$`), runsHere},
	{regexp.MustCompile(`^scp -P 2222 `), runsHere},
	{regexp.MustCompile(`^sftp -P 2222 (web1|INSTANCE)@HOST`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 -N -L 18080:127\.0\.0\.1:80 (web1|INSTANCE)@HOST$`), runsHere},
	{regexp.MustCompile(`^ssh -p 2222 -N -R 9000:127\.0\.0\.1:3000 INSTANCE@HOST$`), "TestRemoteForward"},
	{regexp.MustCompile(`^curl `), runsHere},

	// Exercised elsewhere, by the test named.
	{regexp.MustCompile(`^ssh -t -p 2222 (web1@localhost|INSTANCE@HOST)$`), "TestDetachTildeDotInBusybox"},
	{regexp.MustCompile(`^ssh -p 2222 HOST (hand INSTANCE|grant INSTANCE WHO)$`), "TestHandAndGrant"},
	{regexp.MustCompile(`^ssh -p 2222 HOST logout$`), "TestOpenSSHSignIn"},
	{regexp.MustCompile(`^ssh -p 2222 HOST keys$`), "TestOpenSSHSignIn"},
	{regexp.MustCompile(`^make demo$`), "TestDemoKeepsToItsOwnContainers"},
	{regexp.MustCompile(`^make (build|test|lint)$`), "TestCIRunsTheREADMEMakeTargets"},
	{regexp.MustCompile(`^make check$`), "TestMakeCheckLeavesOutOnlyTheEnginePackages"},
	// The package test installs it with dpkg, adds a key as the README
	// does and runs the unit's exact command line as its user (no
	// systemd runs on the test machine, so not systemctl itself).
	{regexp.MustCompile(`^make package$|^sudo dpkg -i dist/termgate_\*\.deb$|^sudo tee -a /etc/termgate/authorized_keys < ~/\.ssh/id_ed25519\.pub$|^sudo systemctl enable --now termgate$`), "TestDebianPackage"},
}

// TestREADMECommandsAreExercised: every README command has a rule, and
// every rule names a test that exists, so none can go stale silently.
func TestREADMECommandsAreExercised(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 20 {
		t.Fatalf("found only %d commands in README.md: the extraction is broken", len(cmds))
	}
	tests := testFunctions(t)
	used := make([]bool, len(readmeRules))
	for _, c := range cmds {
		i := ruleFor(c.text)
		if i < 0 {
			t.Errorf("README.md line %d: %q is exercised by no test: run it in readme_run_test.go or name the test that does in readmeRules", c.line, c.text)
			continue
		}
		used[i] = true
		if !tests[readmeRules[i].test] {
			t.Errorf("README.md line %d: %q: rule names %s, which no _test.go file defines", c.line, c.text, readmeRules[i].test)
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("rule %q matches no README command any more: remove it", readmeRules[i].match)
		}
	}
}

// ruleFor is the index of the first rule matching cmd, or -1.
func ruleFor(cmd string) int {
	for i, r := range readmeRules {
		if r.match.MatchString(cmd) {
			return i
		}
	}
	return -1
}

var testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)

// testFunctions are the names of the Test functions of the module.
func testFunctions(t *testing.T) map[string]bool {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestCIRunsTheREADMEMakeTargets: the README's development commands are
// what CI runs, so a broken one is a red CI run.
func TestCIRunsTheREADMEMakeTargets(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"lint", "build", "test"} {
		if !regexp.MustCompile(`(?m)^\s*(if ! )?make ` + target + `\b`).Match(ci) {
			t.Errorf(".ci/run does not run make %s, which the README gives", target)
		}
	}
}

// TestMakeCheckLeavesOutOnlyTheEnginePackages: the README's make check
// builds, lints and runs with -race -short the tests of every package but
// ENGINE_PKGS, each of which exists (a renamed one would otherwise drop
// out of both lists silently). make test, which CI runs, runs them all.
func TestMakeCheckLeavesOutOnlyTheEnginePackages(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed")
	}
	dry := exec.Command("make", "-n", "check")
	dry.Dir = root
	out, err := dry.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n check: %v\n%s", err, out)
	}
	var testLine string
	for _, want := range []string{"go vet ", "staticcheck", "go build ", "go test -race -count=1 -short "} {
		found := false
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, want) {
				found = true
				if strings.HasPrefix(want, "go test") {
					testLine = line
				}
			}
		}
		if !found {
			t.Errorf("make check does not run %q:\n%s", want, out)
		}
	}
	list := exec.Command("go", "list", "./...")
	list.Dir = root
	pkgs, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	names := exec.Command("make", "-s", "--eval", "print-engine-pkgs: ; @echo $(ENGINE_PKGS)", "print-engine-pkgs")
	names.Dir = root
	eng, err := names.Output()
	if err != nil || len(strings.Fields(string(eng))) == 0 {
		t.Fatalf("the Makefile's ENGINE_PKGS: %v %q", err, eng)
	}
	engine := map[string]bool{}
	for _, p := range strings.Fields(string(eng)) {
		engine["github.com/termgate/termgate/"+p] = true
	}
	checked := map[string]bool{}
	for _, f := range strings.Fields(testLine) {
		checked[f] = true
	}
	for pkg := range strings.Lines(string(pkgs)) {
		pkg = strings.TrimSpace(pkg)
		switch {
		case engine[pkg] && checked[pkg]:
			t.Errorf("make check runs %s, one of ENGINE_PKGS", pkg)
		case !engine[pkg] && !checked[pkg]:
			t.Errorf("make check leaves out %s, which is not in ENGINE_PKGS", pkg)
		}
		delete(engine, pkg)
	}
	for pkg := range engine {
		t.Errorf("ENGINE_PKGS names %s, which is no package", pkg)
	}
}
