package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/termgate/termgate/internal/termtest"
	gossh "golang.org/x/crypto/ssh"
)

// TestRevocationIsImmediate: removing a key from authorized_keys and a
// token from the token file disconnects the clients they attached within
// 5 seconds, with a notice, while the other credentials keep working (the
// contract's "Revocation is immediate").
func TestRevocationIsImmediate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	newKey := func() (gossh.Signer, string) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, _ := gossh.NewSignerFromKey(priv)
		return s, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey())))
	}
	newToken := func() string {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	gone, goneLine := newKey()
	kept, keptLine := newKey()
	goneTok, keptTok := newToken(), newToken()
	keysFile, tokFile := filepath.Join(state, "authorized_keys"), filepath.Join(state, "api_token")
	write := func(path, data string) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(keysFile, goneLine+"\n"+keptLine+"\n")
	write(tokFile, goneTok+" mallory\n"+keptTok+" alice\n")
	g := startGateway(t, dir, "--state-dir", state, "--backend", "local", "--local-instances", "web1")

	sshAttach := func(s gossh.Signer) (*termtest.Stream, chan error) {
		c, err := gossh.Dial("tcp", g.ssh, &gossh.ClientConfig{User: "web1", Auth: []gossh.AuthMethod{gossh.PublicKeys(s)},
			HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
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
		ended := make(chan error, 1)
		go func() { ended <- sess.Wait() }()
		return out, ended
	}
	goneOut, goneEnded := sshAttach(gone)
	keptOut, keptEnded := sshAttach(kept)

	wsAttach := func(tok string) *websocket.Conn {
		h := http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://" + g.http}}
		c, _, err := websocket.DefaultDialer.Dial("ws://"+g.http+"/api/instances/web1/terminal", h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	goneWS, keptWS := wsAttach(goneTok), wsAttach(keptTok)

	// The administrator removes one key and one token.
	removed := time.Now()
	write(keysFile, keptLine+"\n")
	write(tokFile, keptTok+" alice\n")

	select {
	case <-goneEnded:
	case <-time.After(5 * time.Second):
		t.Fatalf("the removed key's SSH client is still attached after 5s; it saw %q", goneOut.String())
	}
	if !strings.Contains(goneOut.String(), "[termgate] access revoked") {
		t.Fatalf("the removed key's SSH client got no notice: %q", goneOut.String())
	}
	// The removed token's WebSocket gets an error event, then a close.
	_ = goneWS.SetReadDeadline(removed.Add(5 * time.Second))
	var sawError bool
	for {
		typ, msg, err := goneWS.ReadMessage()
		if err != nil {
			if !sawError {
				t.Fatalf("the removed token's WebSocket ended (%v) without an error event", err)
			}
			if _, ok := err.(*websocket.CloseError); !ok {
				t.Fatalf("the removed token's WebSocket was not closed within 5s: %v", err)
			}
			break
		}
		var ev struct{ Type, Message string }
		if typ == websocket.TextMessage && json.Unmarshal(msg, &ev) == nil && ev.Type == "error" && strings.Contains(ev.Message, "revoked") {
			sawError = true
		}
	}

	// The credentials that stayed keep working, on the same shell.
	_ = keptWS.WriteMessage(websocket.BinaryMessage, []byte("echo still-$((6*7))\n"))
	_ = keptWS.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got bytes.Buffer
	for !strings.Contains(got.String(), "still-42") {
		_, msg, err := keptWS.ReadMessage()
		if err != nil {
			t.Fatalf("the kept token's WebSocket: %v (saw %q)", err, got.String())
		}
		got.Write(msg)
	}
	if m, _ := keptOut.WaitFor(regexp.MustCompile(`still-42`), 0, 10*time.Second); m == nil {
		t.Fatalf("the kept key's SSH client did not see the shell's output: %q", keptOut.String())
	}
	select {
	case err := <-keptEnded:
		t.Fatalf("the kept key's SSH session ended: %v", err)
	default:
	}
}
