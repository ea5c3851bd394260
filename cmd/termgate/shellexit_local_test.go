package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/termgate/termgate/internal/termtest"
	gossh "golang.org/x/crypto/ssh"
)

// Session semantics 7 on the local backend: a shell that exits while a
// background job holds its terminal open ends the session for the OpenSSH
// client (ssh -tt: the exit status) and the WebSocket client (an exit
// event), and its job is gone (issue 34 item 2).
func TestLocalShellExitWithAJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but there is no OpenSSH client: %v", err)
		}
		t.Skipf("no OpenSSH client: %v", err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := gossh.NewSignerFromKey(priv)
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	for path, data := range map[string][]byte{
		keyFile:                                 pem.EncodeToMemory(block),
		filepath.Join(state, "authorized_keys"): gossh.MarshalAuthorizedKey(signer.PublicKey()),
		filepath.Join(state, "api_token"):       []byte(token + " admin\n"),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := startGateway(t, dir, "--state-dir", state, "--backend", "local", "--local-instances", "web1")

	_, port, _ := net.SplitHostPort(g.ssh)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ssh := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", keyFile, "-p", port, "-tt", "web1@127.0.0.1")
	ssh.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "TERM=xterm"}
	out, errOut := termtest.NewStream(), termtest.NewStream()
	ssh.Stdout, ssh.Stderr = out, errOut
	stdin, err := ssh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ssh.Start(); err != nil {
		t.Fatal(err)
	}
	sshDone := make(chan error, 1)
	go func() { sshDone <- ssh.Wait() }()
	t.Cleanup(func() { cancel(); <-sshDone })
	seen := 0
	expect := func(re string) []string {
		t.Helper()
		m, at := out.WaitFor(regexp.MustCompile(re), seen, 20*time.Second)
		if m == nil {
			t.Fatalf("ssh: no %q in %q (stderr %q)", re, out.String()[seen:], errOut.String())
		}
		seen = at
		return m
	}
	_, _ = io.WriteString(stdin, "(while true; do sleep 2; done) & echo JOB=$! SHELL=$$\n")
	m := expect(`JOB=(\d+) SHELL=(\d+)`)
	job, _ := strconv.Atoi(m[1])
	shell, _ := strconv.Atoi(m[2])

	h := http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://" + g.http}}
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+g.http+"/api/instances/web1/terminal", h)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	_, _ = io.WriteString(stdin, "echo good\"\"bye; exit 3\n")
	expect(`goodbye`)
	select {
	case err := <-sshDone:
		sshDone <- err // for the cleanup
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("ssh after `exit 3`: %v, want status 3; stderr %q", err, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("ssh did not end within 20s of the shell's exit")
	}
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		typ, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("the WebSocket ended (%v) without an exit event", err)
		}
		var ev struct {
			Type string
			Code int
		}
		if typ == websocket.TextMessage && json.Unmarshal(msg, &ev) == nil && ev.Type == "exit" {
			if ev.Code != 3 {
				t.Errorf("the WebSocket exit event %s, want code 3", msg)
			}
			break
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := liveOfSession(shell)
		if _, err := os.Stat("/proc/" + strconv.Itoa(job)); err == nil && !isZombie(job) {
			left = append(left, job)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20s after the shell's exit its processes still run: %v (job %d)", left, job)
		}
	}
}

// liveOfSession lists the live processes of session sid.
func liveOfSession(sid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 3 && f[0] != "Z" && f[3] == strconv.Itoa(sid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}
