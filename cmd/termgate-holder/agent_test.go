package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/agentwire"
)

// TestAgentSocketCarriesRequests runs agentSocket over two pipes, as an
// exec's stdin and stdout: a request on the socket reaches the gateway's
// side framed with its process (this test's), the reply goes back to that
// connection; the directory is 0700 and the socket 0600; the end of stdin
// ends it and removes both.
func TestAgentSocketCarriesRequests(t *testing.T) {
	sock := filepath.Join(t.TempDir(), ".termgate-agent-x", "agent.sock")
	inR, inW := io.Pipe()   // the gateway's replies: the helper's stdin
	outR, outW := io.Pipe() // the requests: its stdout
	done := make(chan error, 1)
	go func() { done <- agentSocket(sock, inR, outW) }()
	out := readyFirst(t, outR)
	for path, want := range map[string]os.FileMode{filepath.Dir(sock): 0o700, sock: 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v (err %v), want %v", path, fi.Mode(), err, want)
		}
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := agentwire.WriteMessage(c, []byte{11}); err != nil { // SSH_AGENTC_REQUEST_IDENTITIES
		t.Fatal(err)
	}
	req, err := agentwire.ReadRequest(out)
	if err != nil {
		t.Fatal(err)
	}
	if req.PID != uint32(os.Getpid()) || req.Comm == "" || !bytes.Equal(req.Msg, []byte{11}) {
		t.Fatalf("request %+v, want pid %d, a name, message [11]", req, os.Getpid())
	}
	if err := agentwire.WriteReply(inW, agentwire.Reply{Conn: req.Conn, Msg: []byte{5}}); err != nil {
		t.Fatal(err)
	}
	got, err := agentwire.ReadMessage(c)
	if err != nil || !bytes.Equal(got, []byte{5}) {
		t.Fatalf("reply %v, %v; want [5]", got, err)
	}
	_ = inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("agentSocket after stdin's end: %v", err)
	}
	if _, err := agentwire.ReadMessage(c); err == nil {
		t.Fatal("the connection outlived the helper")
	}
	if _, err := os.Lstat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Fatalf("the socket's directory is left behind: %v", err)
	}
}

// TestAgentSocketRefusesAnOpenDirectory: a directory at the socket's place
// that others may enter (planted by another user, or loosened) is
// refused, and so is a link.
func TestAgentSocketRefusesAnOpenDirectory(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{open, link} {
		err := agentSocket(filepath.Join(dir, "agent.sock"), strings.NewReader(""), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("%s: %v, want a refusal", dir, err)
		}
	}
}
