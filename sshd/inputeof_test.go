package sshd

import (
	"bytes"
	"context"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// TestOpenSSHPipedAttachEndsAtEOF (issue 40 item 4): ssh web1@HOST < file
// (no terminal) ends when its input ends, as docker exec -i does, with
// the output the input caused and status 0; the shell keeps running.
func TestOpenSSHPipedAttachEndsAtEOF(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no ssh client: %v", err)
		}
		t.Skip("no OpenSSH client (ssh) installed")
	}
	f := newFixture(t, nil)
	dir := t.TempDir()
	block, err := gossh.MarshalPrivateKey(f.privs["admin"], "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(f.addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", keyFile, "-p", port, "web1@127.0.0.1")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Stdin = strings.NewReader("echo piped-$((6*7)) pid=$$\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the piped attach did not end at EOF within %s; stdout %q", waitFor, stdout.String())
	}
	if err != nil || !strings.Contains(stdout.String(), "piped-42") {
		t.Fatalf("ssh: %v; stdout %q, stderr %q; want status 0 and the input's output", err, stdout.String(), stderr.String())
	}
	eventually(t, "the detach", func() bool { return clientsOf(f.reg, "web1") == 0 })
	if s := f.reg.Sessions(); len(s) != 1 || s[0].Instance != "web1" {
		t.Fatalf("after the piped attach: sessions %+v, want web1's still running", s)
	}
}
