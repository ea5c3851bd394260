package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/termgate/termgate/record"
)

func TestRecordInputFlag(t *testing.T) {
	o, err := parseFlags(nil, env(map[string]string{"TERMGATE_RECORD_DIR": "/r"}))
	if err != nil || o.recordInput {
		t.Fatalf("default: input recorded %v, %v; want off", o.recordInput, err)
	}
	o, err = parseFlags(nil, env(map[string]string{"TERMGATE_RECORD_DIR": "/r", "TERMGATE_RECORD_INPUT": "true"}))
	if err != nil || !o.recordInput {
		t.Fatalf("from the environment: %v, %v", o.recordInput, err)
	}
	if _, err := parseFlags([]string{"--record-input"}, env(nil)); err == nil || !strings.Contains(err.Error(), "--record-dir") {
		t.Fatalf("--record-input without --record-dir: %v", err)
	}
}

// The whole gateway with --record-input: what a writer types is in the
// recording as "i" events, exactly; what a read-only observer types (refused)
// is not.
func TestRunRecordsInput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	dir := t.TempDir()
	state, recDir := filepath.Join(dir, "state"), filepath.Join(dir, "recordings")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, 2)
	for i := range tokens {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		tokens[i] = hex.EncodeToString(b)
	}
	file := tokens[0] + " alice\n" + tokens[1] + " auditor read-only\n"
	if err := os.WriteFile(filepath.Join(state, "api_token"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, dir, "--state-dir", state, "--backend", "local", "--local-instances", "web1",
		"--shell", "sh", "--replay", "raw", "--record-dir", recDir, "--record-input")

	dial := func(tok string) *websocket.Conn {
		h := http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://" + g.http}}
		c, _, err := websocket.DefaultDialer.Dial("ws://"+g.http+"/api/instances/web1/terminal", h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// until reads until the output holds want, or a text event does.
	until := func(c *websocket.Conn, want string) string {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		var out strings.Builder
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("waiting for %q: %v (got %q)", want, err, out.String())
			}
			if typ == websocket.BinaryMessage {
				out.Write(msg)
			}
			if strings.Contains(out.String(), want) || (typ == websocket.TextMessage && strings.Contains(string(msg), want)) {
				return string(msg)
			}
		}
	}
	writer := dial(tokens[0])
	attached := until(writer, `"attached"`)
	var ev struct{ Session string }
	if err := json.Unmarshal([]byte(attached), &ev); err != nil || ev.Session == "" {
		t.Fatalf("attached event %q: %v", attached, err)
	}
	observer := dial(tokens[1])
	until(observer, `"attached"`)
	if err := observer.WriteMessage(websocket.BinaryMessage, []byte("echo observer-typed\n")); err != nil {
		t.Fatal(err)
	}
	until(observer, `"error"`)
	typed := "echo in-$((6*7))\n"
	if err := writer.WriteMessage(websocket.BinaryMessage, []byte(typed)); err != nil {
		t.Fatal(err)
	}
	until(writer, "in-42")
	writer.Close()
	observer.Close()
	g.stop()

	f, err := os.Open(filepath.Join(recDir, "web1", ev.Session+".cast"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, evs, err := record.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, e := range evs {
		if e.Type == "i" {
			in.WriteString(e.Data)
		}
	}
	if in.String() != typed {
		t.Fatalf("recorded input %q, want exactly what the writer typed, %q", in.String(), typed)
	}
}
