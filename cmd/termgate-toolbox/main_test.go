package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sh runs line as termgate-toolbox -c LINE in dir and returns its output
// and status.
func sh(t *testing.T, dir, line string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run([]string{"-c", "cd " + dir + " && " + line}, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestUtilitiesRunInTheShell(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("alpha\nbeta\ngamma\nBeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ line, want string }{
		{`echo $((6*7))`, "42\n"},
		{`ls`, "f\n"},
		{`cat f | head -n 2`, "alpha\nbeta\n"},
		{`head -1 f`, "alpha\n"},
		{`tail -n 2 f`, "gamma\nBeta\n"},
		{`grep -in beta f`, "2:beta\n4:Beta\n"},
		{`grep -c -v e f`, "2\n"},
		{`grep -F -q a.p f || echo none`, "none\n"},
		{`wc -l f`, "      4 f\n"},
		{`echo one two | wc -w`, "      2\n"},
		{`mkdir d && cp f d/g && mv d/g d/h && ls d && rm -r d && ls`, "h\nf\n"},
		{`X=1 env | grep '^X='`, "X=1\n"},
		{`export Y=2; env | grep '^Y='`, "Y=2\n"},
		{`ps | grep -c "^ *$$ "`, "1\n"},
		{`kill -0 $$ && echo alive`, "alive\n"},
		{`/bin/ls`, "f\n"},
	}
	for _, c := range cases {
		out, errs, code := sh(t, dir, c.line)
		if out != c.want || code != 0 {
			t.Errorf("%s: %q (stderr %q, status %d), want %q", c.line, out, errs, code, c.want)
		}
	}
}

func TestStatusesAndErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, code := sh(t, dir, `exit 3`); code != 3 {
		t.Errorf("exit 3: status %d", code)
	}
	if _, _, code := sh(t, dir, `grep x /nonexistent`); code != 2 {
		t.Errorf("grep of a missing file: status %d, want 2", code)
	}
	if _, errs, code := sh(t, dir, `cat /nonexistent`); code != 1 || !strings.Contains(errs, "cat:") {
		t.Errorf("cat of a missing file: status %d, stderr %q", code, errs)
	}
	if _, errs, code := sh(t, dir, `kill 0x`); code != 1 || !strings.Contains(errs, "kill: 0x") {
		t.Errorf("kill of a bad pid: status %d, stderr %q", code, errs)
	}
	if _, _, code := sh(t, dir, `no-such-program-anywhere`); code != 127 {
		t.Errorf("a missing program: status %d, want 127", code)
	}
}

func TestReadyAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--ready"}, nil, &out, &errb); code != 0 || out.String() != Ready+"\n" {
		t.Fatalf("--ready: %d %q", code, out.String())
	}
	if code := run([]string{"--bogus"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown argument") {
		t.Fatalf("--bogus: %d %q", code, errb.String())
	}
}

// TestRemoveSelf: the copy goes with its upload directory, and nothing
// outside one of the gateway's upload directories is ever removed.
func TestRemoveSelf(t *testing.T) {
	root := t.TempDir()
	up := filepath.Join(root, uploadPrefix+"abc")
	if err := os.Mkdir(up, 0o700); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(up, "toolbox")
	if err := os.WriteFile(exe, []byte("x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := removeSelf(exe); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(up); !os.IsNotExist(err) {
		t.Fatalf("upload directory left: %v", err)
	}
	other := filepath.Join(root, "toolbox")
	if err := os.WriteFile(other, []byte("x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := removeSelf(other); err == nil {
		t.Fatal("removed a copy outside an upload directory")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file outside an upload directory went: %v", err)
	}
}
