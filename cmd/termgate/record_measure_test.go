package main

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestMeasureRecordingOverhead (TERMGATE_MEASURE_RECORDING=MB) relays MB
// megabytes of shell output to one WebSocket client through the whole
// gateway, with and without --record-dir, three rounds each, and logs the
// rates. It measures; it asserts nothing about speed.
func TestMeasureRecordingOverhead(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("TERMGATE_MEASURE_RECORDING"))
	if mb <= 0 {
		t.Skip("set TERMGATE_MEASURE_RECORDING=MB to measure")
	}
	for round := range 3 {
		for _, rec := range []bool{false, true} {
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			if err := os.MkdirAll(state, 0o700); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			tok := hex.EncodeToString(b)
			if err := os.WriteFile(filepath.Join(state, "api_token"), []byte(tok+" alice\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--state-dir", state, "--backend", "local", "--local-instances", "web1", "--shell", "sh", "--replay", "raw"}
			if rec {
				args = append(args, "--record-dir", filepath.Join(dir, "rec"))
			}
			g := startGateway(t, dir, args...)
			h := http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://" + g.http}}
			c, _, err := websocket.DefaultDialer.Dial("ws://"+g.http+"/api/instances/web1/terminal?cols=200&rows=50", h)
			if err != nil {
				t.Fatal(err)
			}
			// Lines of 99 letters and a newline; the end marker is
			// computed by the shell so the echoed command never matches.
			cmd := "yes abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopq | head -c " + strconv.Itoa(mb<<20) + "; echo END-$((6*7))\n"
			start := time.Now()
			if err := c.WriteMessage(websocket.BinaryMessage, []byte(cmd)); err != nil {
				t.Fatal(err)
			}
			var got int64
			var tail string
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Minute))
			for !strings.Contains(tail, "END-42") {
				typ, msg, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("after %d bytes: %v", got, err)
				}
				if typ != websocket.BinaryMessage {
					continue
				}
				got += int64(len(msg))
				tail = tail[max(0, len(tail)-16):] + string(msg)
			}
			el := time.Since(start)
			c.Close()
			g.stop()
			dropped := ""
			for _, line := range strings.Split(g.logs.String(), "\n") {
				if strings.Contains(line, `"recording closed"`) {
					dropped = line[strings.Index(line, `"bytes_written"`):]
				}
			}
			t.Logf("round %d, recording %-5v: %d MB in %v: %.0f MB/s %s", round+1, rec, got>>20, el.Round(time.Millisecond), float64(got)/1e6/el.Seconds(), dropped)
		}
	}
}
