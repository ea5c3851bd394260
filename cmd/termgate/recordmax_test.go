package main

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/termgate/termgate/record"
)

func TestRecordMaxSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "65536": 65536, "64KiB": 64 << 10, "512MiB": 512 << 20, "2GiB": 2 << 30, "1g": 1 << 30} {
		o, err := parseFlags(nil, env(map[string]string{"TERMGATE_RECORD_MAX_SIZE": in}))
		if err != nil || o.recordMaxSize != want {
			t.Errorf("TERMGATE_RECORD_MAX_SIZE=%s: %d, %v; want %d", in, o.recordMaxSize, err, want)
		}
	}
	for _, bad := range []string{"-1", "lots", "10", "1TiB5"} {
		if _, err := parseFlags([]string{"--record-max-size", bad}, env(nil)); err == nil || !strings.Contains(err.Error(), "--record-max-size") {
			t.Errorf("--record-max-size %s: %v, want an error naming the flag", bad, err)
		}
	}
}

// The whole gateway with --record-max-size: a shell that prints more than
// the limit gets its recording cut (an m event ends the file), and the
// session goes on.
func TestRunCutsARecordingAtMaxSize(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	dir := t.TempDir()
	state, recDir := filepath.Join(dir, "state"), filepath.Join(dir, "recordings")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	if err := os.WriteFile(filepath.Join(state, "api_token"), []byte(tok+" alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, dir, "--state-dir", state, "--backend", "local", "--local-instances", "web1",
		"--shell", "sh", "--replay", "raw", "--record-dir", recDir, "--record-max-size", "8KiB")
	h := http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://" + g.http}}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+g.http+"/api/instances/web1/terminal", h)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out strings.Builder
	var session string
	until := func(want string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		for !strings.Contains(out.String(), want) {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("waiting for %q: %v", want, err)
			}
			if typ == websocket.BinaryMessage {
				out.Write(msg)
			} else if session == "" && strings.Contains(string(msg), `"attached"`) {
				i := strings.Index(string(msg), `"session":"`)
				session = string(msg)[i+11 : i+27]
			}
		}
	}
	send := func(s string) {
		if err := c.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	send("i=0; while [ $i -lt 400 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done; echo big-$((6*7))\n")
	until("big-42")
	send("echo still-$((6*7))\n") // the session goes on after the cut
	until("still-42")
	c.Close()
	g.stop()

	f, err := os.Open(filepath.Join(recDir, "web1", session+".cast"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, evs, err := record.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Type != "m" || !strings.Contains(last.Data, "recording cut") {
		t.Fatalf("last event %+v, want the cut marker", last)
	}
	if fi, _ := f.Stat(); fi.Size() > 8<<10+200 {
		t.Fatalf("recording is %d bytes, limit 8KiB", fi.Size())
	}
	if !strings.Contains(g.logs.String(), "recording cut") {
		t.Fatal("the cut is not in the log")
	}
}

// TestRecordLimitsAreFiniteByDefault: issue 18 L3. Without flags a
// recording is cut at 100MiB and the directory holds at most 10GiB; 0
// turns either off, and the start then warns that recordings are
// unbounded.
func TestRecordLimitsAreFiniteByDefault(t *testing.T) {
	o, err := parseFlags(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.recordMaxSize != 100<<20 || o.recordMaxTotal != 10<<30 {
		t.Fatalf("defaults --record-max-size %d, --record-max-total %d; want 100MiB and 10GiB", o.recordMaxSize, o.recordMaxTotal)
	}
	o, err = parseFlags([]string{"--record-max-total", "512MiB"}, env(map[string]string{"TERMGATE_RECORD_MAX_SIZE": "0"}))
	if err != nil || o.recordMaxSize != 0 || o.recordMaxTotal != 512<<20 {
		t.Fatalf("%+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"--record-max-total", "lots"}, env(nil)); err == nil || !strings.Contains(err.Error(), "--record-max-total") {
		t.Fatalf("--record-max-total lots: %v, want an error naming the flag", err)
	}
	for _, tc := range []struct {
		size, total int64
		warn        string
	}{
		{100 << 20, 10 << 30, ""},
		{0, 10 << 30, "--record-max-size 0"},
		{100 << 20, 0, "--record-max-total 0"},
	} {
		var logs strings.Builder
		warnUnbounded(&options{recordDir: "/rec", recordMaxSize: tc.size, recordMaxTotal: tc.total}, slog.New(slog.NewTextHandler(&logs, nil)))
		if got := logs.String(); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) || (got != "" && !strings.Contains(got, "level=WARN")) {
			t.Errorf("size %d total %d: logged %q, want a warning naming %q", tc.size, tc.total, got, tc.warn)
		}
	}
}
