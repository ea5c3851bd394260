package main

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"go.uber.org/goleak"

	"github.com/termgate/termgate/internal/termtest"
)

// firstStart runs the real binary on a fresh state directory (so it
// generates the token file) with the local backend, stderr to stderr, and
// returns the state directory and a stop that ends it with SIGTERM.
func firstStart(t *testing.T, stderr *os.File, args ...string) (state string, stop func()) {
	t.Helper()
	state = filepath.Join(t.TempDir(), "state")
	cmd := exec.Command(termgateBinary(t), append([]string{"--state-dir", state, "--backend", "local", "--local-instances", "x",
		"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	// An *os.File is handed to the child as it is: its stderr is that
	// file (or terminal), not a pipe os/exec copies from.
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("the gateway did not stop on SIGTERM")
		}
	}
	t.Cleanup(stop)
	return state, stop
}

// readToken is the token the first start wrote (the token file's first
// field).
func readToken(t *testing.T, state string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "api_token"))
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.Fields(string(b))
	if len(tok) == 0 || len(tok[0]) < 40 {
		t.Fatalf("no generated token in api_token: %q", b)
	}
	return tok[0]
}

// waitInFile waits until the file holds a match of re.
func waitInFile(t *testing.T, path string, re *regexp.Regexp, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		b, _ := os.ReadFile(path)
		if m := re.FindStringSubmatch(string(b)); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %s within %v:\n%s", re, path, within, b)
		}
		time.Sleep(50 * time.Millisecond) // poll interval, not an assertion
	}
}

// TestFirstStartKeepsTheTokenOutOfLogs: issue 32 item 6 (red team round 4
// M2). With stderr a file, as under systemd (the journal) or a container
// runtime, the first start prints how to open the browser and where the
// new token is, but never the token: not in the main log, not in the
// audit trail, also after a login with it.
func TestFirstStartKeepsTheTokenOutOfLogs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	logPath := filepath.Join(t.TempDir(), "stderr.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	state, stop := firstStart(t, logFile, "--log-level", "debug")
	m := waitInFile(t, logPath, regexp.MustCompile(`"msg":"termgate is listening"[^\n]*"http":"([^"]+)"`), 30*time.Second)
	banner := waitInFile(t, logPath, regexp.MustCompile(`Browser: +(\S+)\n +\((.*)\)\n`), 10*time.Second)
	token := readToken(t, state)
	tokenFile := filepath.Join(state, "api_token")
	// The banner still tells a newcomer how to open the browser.
	if want := "http://localhost:" + strings.Split(m[1], ":")[1] + "/#token=TOKEN"; banner[1] != want {
		t.Errorf("browser address %q, want %q", banner[1], want)
	}
	if !strings.Contains(banner[2], tokenFile) {
		t.Errorf("the banner does not name the token file %s: %q", tokenFile, banner[2])
	}
	// Use the token, so the audit trail has a login (and the debug log
	// its request), then stop: every record is written.
	resp, err := http.PostForm("http://"+m[1]+"/api/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login with the generated token: %s", resp.Status)
	}
	stop()

	files := []string{logPath}
	err = filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != tokenFile {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	audited := false
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("%s holds the token:\n%s", p, b)
		}
		audited = audited || (filepath.Base(p) == "audit.log" && bytes.Contains(b, []byte(`"method":"login"`)))
	}
	if !audited {
		t.Errorf("no login in %s/audit.log: the search above looked at no audit record", state)
	}
}

// TestFirstStartShowsTheTokenOnATerminal: issue 32 item 6, the other half.
// With stderr a terminal (a person running it, make demo) the first start
// prints the browser address with the new token, ready to open.
func TestFirstStartShowsTheTokenOnATerminal(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	out := termtest.NewStream()
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, ptmx); close(copied) }()
	state, stop := firstStart(t, tty)
	tty.Close() // the child holds its own copy
	m, _ := out.WaitFor(regexp.MustCompile(`Browser: +(\S+)`), 0, 30*time.Second)
	if m == nil {
		t.Fatalf("no browser address on the terminal:\n%s", out.String())
	}
	token := readToken(t, state)
	if u, err := url.Parse(m[1]); err != nil || u.Fragment != "token="+token {
		t.Errorf("browser address %q, want one with #token= and the token from api_token", m[1])
	}
	stop()
	// Closing the terminal ends the copy: nothing outlives the test.
	ptmx.Close()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		t.Error("the terminal's copy did not end")
	}
}
