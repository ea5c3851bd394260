package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

// The logs as an operator reads them (docs/LOGS.md), from the real binary.

// logsToken is the API token logsState writes, named "tester-web".
const logsToken = "tok-logs-0123456789abcdef0123456789"

// logsState is a state directory whose authorized_keys lets the returned
// key in as "tester" and whose api_token lets logsToken in as
// "tester-web".
func logsState(t *testing.T) (string, gossh.Signer) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := gossh.NewSignerFromKey(priv)
	line := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(signer.PublicKey()))) + " tester\n"
	if err := os.WriteFile(filepath.Join(state, "authorized_keys"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "api_token"), []byte(logsToken+" tester-web\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return state, signer
}

// webAttachAndDetach attaches the page's way (a WebSocket) to web1,
// waits for the attached event and closes as a tab does.
func webAttachAndDetach(t *testing.T, addr string) {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + logsToken}, "Origin": {"http://" + addr}}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/api/instances/web1/terminal", h)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := c.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
}

// attachAndDetach attaches a terminal to web1, waits for the shell's
// first output, and hangs up.
func attachAndDetach(t *testing.T, addr string, signer gossh.Signer) {
	t.Helper()
	c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{User: "web1", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out := termtest.NewStream()
	sess.Stdout, sess.Stderr = out, out
	if err := sess.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	if m, _ := out.WaitFor(regexp.MustCompile(`.`), 0, 10*time.Second); m == nil {
		t.Fatal("the shell printed nothing")
	}
	sess.Close()
}

// infoCycle runs do and returns the lines the log got meanwhile, once its
// detached line came and 300 ms passed (a stray line would show by then).
func infoCycle(t *testing.T, logs *termtest.Stream, do func()) []string {
	t.Helper()
	from := len(logs.Bytes())
	do()
	if d, _ := logs.WaitFor(regexp.MustCompile(`INFO  detached .*\n`), from, 10*time.Second); d == nil {
		t.Fatalf("no detached line:\n%s", logs.String())
	}
	time.Sleep(300 * time.Millisecond)
	var lines []string
	for _, l := range strings.Split(string(logs.Bytes()[from:]), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// At info, in text, an SSH attach and its detach are two lines of at most
// 120 characters with the short keys, and nothing else, and so are a web
// attach and detach to the same session; the audit
// records go to STATE_DIR/audit.log (0600), not into the main log.
func TestCLILogsAttachDetachInTwoLines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the gateway")
	}
	state, signer := logsState(t)
	cmd := exec.Command(termgateBinary(t), "--backend", "local", "--local-instances", "web1", "--state-dir", state,
		"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--log-format", "text")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + state}
	logs := termtest.NewStream()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("the gateway did not stop on SIGTERM")
		}
	}()
	// The text log names the SSH listener in its listening line.
	m, _ := logs.WaitFor(regexp.MustCompile(`termgate is listening ssh=(127\.0\.0\.1:\d+) http=(127\.0\.0\.1:\d+) `), 0, 30*time.Second)
	if m == nil {
		t.Fatalf("no listening line:\n%s", logs.String())
	}
	// The banner goes to stdout, the log to stderr: wait for both, or the
	// banner lands in the first cycle's lines.
	if b, _ := logs.WaitFor(regexp.MustCompile(`Browser: .*\n`), 0, 30*time.Second); b == nil {
		t.Fatalf("no banner:\n%s", logs.String())
	}
	sshAddr := m[1]
	sshLines := infoCycle(t, logs, func() { attachAndDetach(t, sshAddr, signer) })
	webLines := infoCycle(t, logs, func() { webAttachAndDetach(t, m[2]) })
	const cycle = `^\d\d:\d\d:\d\d INFO  (attached|detached) via=(ssh who=tester|web who=tester-web) instance=web1 session=([0-9a-f]{8}) `
	want := []*regexp.Regexp{
		regexp.MustCompile(cycle + `new=true$`),
		regexp.MustCompile(cycle + `after=[0-9.]+m?s out=[1-9][0-9]*$`),
		regexp.MustCompile(cycle + `new=false$`),
		regexp.MustCompile(cycle + `after=[0-9.]+m?s out=[1-9][0-9]*$`),
	}
	lines := append(sshLines, webLines...)
	if len(sshLines) != 2 || len(webLines) != 2 {
		t.Fatalf("at info an attach and a detach are %d lines over SSH and %d over the web, want 2 and 2:\n%s",
			len(sshLines), len(webLines), strings.Join(lines, "\n"))
	}
	var ids []string
	for i, re := range want {
		sm := re.FindStringSubmatch(lines[i])
		if sm == nil {
			t.Fatalf("line %d %q does not match %s", i+1, lines[i], re)
		}
		if len(lines[i]) > 120 {
			t.Errorf("line %d is %d characters long, want at most 120: %q", i+1, len(lines[i]), lines[i])
		}
		ids = append(ids, sm[3])
	}
	if ids[0] != ids[1] || ids[0] != ids[2] || ids[0] != ids[3] {
		t.Errorf("the lines name sessions %v, want one", ids)
	}
	t.Logf("the cycle at info:\n%s", strings.Join(lines, "\n"))

	if strings.Contains(logs.String(), " event=") || strings.Contains(logs.String(), "audit=true") {
		t.Errorf("audit records in the main log:\n%s", logs.String())
	}
	path := filepath.Join(state, "audit.log")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the audit file beside the state: %v %v", fi, err)
	}
	events := map[string]map[string]any{}
	b, _ := os.ReadFile(path)
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		events[rec["event"].(string)] = rec
	}
	sshRecords := map[string]bool{}
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var rec map[string]any
		_ = json.Unmarshal(l, &rec)
		if rec["who"] == "tester" && rec["via"] == "ssh" && strings.HasPrefix(fmt.Sprint(rec["key"]), "SHA256:") {
			sshRecords[fmt.Sprint(rec["event"])] = true
		}
	}
	for _, ev := range []string{"auth_success", "attach", "detach"} {
		if !sshRecords[ev] {
			t.Errorf("no audit %s record naming tester's key:\n%s", ev, b)
		}
	}
	if events["detach"]["via"] != "websocket" || events["detach"]["who"] != "tester-web" {
		t.Errorf("the last detach record is not the web one: %v", events["detach"])
	}
	if !strings.HasPrefix(events["attach"]["session"].(string), ids[0]) {
		t.Errorf("the audit trail's session %v is not the log's %s", events["attach"]["session"], ids[0])
	}

	// logrotate's way: rename, then SIGHUP; the next record goes to a new
	// audit.log.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	hupFrom := len(logs.Bytes())
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if m, _ := logs.WaitFor(regexp.MustCompile(`INFO  reloaded`), hupFrom, 10*time.Second); m == nil {
		t.Fatalf("no reload after SIGHUP:\n%s", logs.String())
	}
	time.Sleep(100 * time.Millisecond) // the reopen follows the reload's line
	c, err := gossh.Dial("tcp", sshAddr, &gossh.ClientConfig{User: "web1", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), `"event":"auth_success"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record in the reopened audit.log after SIGHUP: %q", b)
		}
	}
}

// On a pipe (no terminal) the default --log-format auto is JSON (the
// fixture finds the JSON listening line), and --audit-log - puts the
// audit records back into the main log, marked audit=true, with no file.
func TestCLILogsAutoIsJSONOnAPipeAndAuditIntoTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the gateway")
	}
	state, signer := logsState(t)
	g, err := gatewayproc.Start(context.Background(), gatewayproc.Config{
		Bin: termgateBinary(t), StateDir: state,
		Args: []string{"--backend", "local", "--local-instances", "web1", "--log-format", "auto", "--audit-log", "-"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := g.Stop(10 * time.Second); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	attachAndDetach(t, g.SSHAddr, signer)
	re := regexp.MustCompile(`\{"time":"[^"]+T[^"]+","level":"INFO","msg":"audit","audit":true,"event":"detach"[^\n]*"who":"tester"[^\n]*\n`)
	if m, _ := g.Log.WaitFor(re, 0, 10*time.Second); m == nil {
		t.Fatalf("no JSON audit detach record in the main log:\n%s", g.Log.String())
	}
	if _, err := os.Stat(filepath.Join(state, "audit.log")); !os.IsNotExist(err) {
		t.Errorf("--audit-log - still wrote %s: %v", filepath.Join(state, "audit.log"), err)
	}
}
