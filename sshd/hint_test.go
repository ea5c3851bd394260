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

// TestOpenSSHDetachHint (issue 40 item 5): the detach notice prints a
// command that works when copied: the port the client connected to and the
// host it can use (localhost for loopback, else --public-host's name).
func TestOpenSSHDetachHint(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no ssh client: %v", err)
		}
		t.Skip("no OpenSSH client (ssh) installed")
	}
	for _, tc := range []struct{ publicHost, host string }{{"", "localhost"}, {"gw.example.com", "gw.example.com"}} {
		f := newFixture(t, func(c *Config) { c.PublicHost = tc.publicHost })
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
		// -e none: the client passes ~. on, as when busybox's prompt hides
		// it from OpenSSH; the gateway detaches.
		cmd := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", keyFile, "-p", port,
			"-e", "none", "-tt", "web1@127.0.0.1")
		cmd.Env = append(os.Environ(), "HOME="+dir)
		cmd.Stdin = strings.NewReader("\r~.")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
		err = cmd.Run()
		cancel()
		want := "(ssh -t -p " + port + " web1@" + tc.host + " to come back)"
		if err != nil || !strings.Contains(stderr.String(), want) {
			t.Errorf("public host %q: ssh %v, stderr %q; want %q", tc.publicHost, err, stderr.String(), want)
		}
	}
}

func TestComeBackOddUser(t *testing.T) {
	s := &Server{}
	if got := s.comeBack(&session{user: "we\x1b[2Jb1"}, "web1"); got != "ssh -t web1@HOST" {
		t.Errorf("comeBack = %q", got)
	}
}
