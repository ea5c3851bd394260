package main

import (
	"bytes"
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
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/record"
)

func TestRecordDirFlag(t *testing.T) {
	o, err := parseFlags(nil, env(map[string]string{"TERMGATE_RECORD_DIR": "/var/lib/termgate/rec"}))
	if err != nil || o.recordDir != "/var/lib/termgate/rec" {
		t.Fatalf("from the environment: %q, %v", o.recordDir, err)
	}
}

// The whole gateway with --record-dir: one WebSocket client types,
// resizes, detaches, reattaches and resets. The first session's recording
// holds everything both its attaches saw, the resize and the detached gap;
// the reset starts a second file (at the size the session had), which /api/sessions names; asciinema
// plays both.
func TestRunRecordsSessions(t *testing.T) {
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
		"--shell", "sh", "--replay", "raw", "--record-dir", recDir)

	type client struct {
		c       *websocket.Conn
		session string
		out     bytes.Buffer // output frames
		events  []string
	}
	attach := func() *client {
		h := http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://" + g.http}}
		c, _, err := websocket.DefaultDialer.Dial("ws://"+g.http+"/api/instances/web1/terminal?cols=100&rows=30", h)
		if err != nil {
			t.Fatal(err)
		}
		cl := &client{c: c}
		t.Cleanup(func() { c.Close() })
		return cl
	}
	// readUntil reads frames until the output contains want (or an event
	// of that type arrives, for "event:TYPE").
	readUntil := func(cl *client, want string) {
		t.Helper()
		_ = cl.c.SetReadDeadline(time.Now().Add(15 * time.Second))
		for {
			if strings.HasPrefix(want, "event:") {
				for _, e := range cl.events {
					if strings.Contains(e, `"type":"`+strings.TrimPrefix(want, "event:")+`"`) {
						return
					}
				}
			} else if strings.Contains(cl.out.String(), want) {
				return
			}
			typ, msg, err := cl.c.ReadMessage()
			if err != nil {
				t.Fatalf("waiting for %q: %v; output %q, events %q", want, err, cl.out.String(), cl.events)
			}
			if typ == websocket.BinaryMessage {
				cl.out.Write(msg)
				continue
			}
			cl.events = append(cl.events, string(msg))
			var ev struct{ Type, Session string }
			if json.Unmarshal(msg, &ev) == nil && (ev.Type == "attached" || ev.Type == "reset") {
				cl.session = ev.Session
				if ev.Type == "reset" {
					cl.out.Reset() // from here on: the new session's output
				}
			}
		}
	}
	send := func(cl *client, s string) {
		t.Helper()
		if err := cl.c.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}

	first := attach()
	readUntil(first, "event:attached")
	send(first, "echo one-$((6*7))\n")
	readUntil(first, "one-42")
	if err := first.c.WriteMessage(websocket.TextMessage, []byte(`{"type":"resize","cols":120,"rows":40}`)); err != nil {
		t.Fatal(err)
	}
	send(first, "stty size\n")
	readUntil(first, "40 120")
	sawFirst := first.out.String()
	first.c.Close()
	s1 := first.session

	time.Sleep(500 * time.Millisecond) // nobody attached: the file keeps the gap
	second := attach()
	readUntil(second, "event:attached")
	if second.session != s1 {
		t.Fatalf("reattached to %s, not %s", second.session, s1)
	}
	send(second, "echo two-$((6*7))\n")
	readUntil(second, "two-42")
	sawSecond := second.out.String()
	if err := second.c.WriteMessage(websocket.TextMessage, []byte(`{"type":"reset"}`)); err != nil {
		t.Fatal(err)
	}
	readUntil(second, "event:reset")
	s2 := second.session
	send(second, "echo three-$((6*7))\n")
	readUntil(second, "three-42")
	sawThird := second.out.String()

	req, _ := http.NewRequest("GET", "http://"+g.http+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var infos []struct{ Instance, Session, Recording string }
	err = json.NewDecoder(resp.Body).Decode(&infos)
	resp.Body.Close()
	if err != nil || len(infos) != 1 || infos[0].Session != s2 || infos[0].Recording != "web1/"+s2+".cast" {
		t.Fatalf("/api/sessions: %+v, %v; want the recording web1/%s.cast", infos, err, s2)
	}
	second.c.Close()
	g.stop() // the recordings are complete once the gateway has stopped

	read := func(session string) (record.Header, []record.Event, string) {
		path := filepath.Join(recDir, "web1", session+".cast")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v", path, fi.Mode())
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		h, evs, err := record.Read(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var out strings.Builder
		for _, ev := range evs {
			if ev.Type == "o" {
				out.WriteString(ev.Data)
			}
		}
		if played, ok := termtest.AsciinemaPlay(t, path); ok && played != out.String() {
			t.Fatalf("asciinema played %q, the file holds %q", played, out.String())
		}
		return h, evs, out.String()
	}
	h1, evs1, out1 := read(s1)
	if h1.Width != 100 || h1.Height != 30 || h1.Env["TERM"] == "" {
		t.Fatalf("first header %+v", h1)
	}
	// Both attaches got the raw replay of everything, then live output:
	// what each saw is the start of the recording.
	for _, saw := range []string{sawFirst, sawSecond} {
		if !strings.HasPrefix(out1, saw) {
			t.Fatalf("recording %q does not start with what a client saw, %q", out1, saw)
		}
	}
	if strings.Contains(out1, "three-42") {
		t.Fatal("the reset session's output went into the first recording")
	}
	var resizes []string
	var one, two float64
	for _, ev := range evs1 {
		switch {
		case ev.Type == "r":
			resizes = append(resizes, ev.Data)
		case ev.Type == "o" && strings.Contains(ev.Data, "one-42") && one == 0:
			one = ev.Time
		case ev.Type == "o" && strings.Contains(ev.Data, "two-42"):
			two = ev.Time
		}
	}
	// The second attach brought its own size back.
	if strings.Join(resizes, " ") != "120x40 100x30" || two-one < 0.5 {
		t.Fatalf("resizes %q; one-42 at %vs, two-42 at %vs: the detached gap must show", resizes, one, two)
	}
	h2, _, out2 := read(s2)
	if h2.Width != 100 || h2.Height != 30 || !strings.HasPrefix(out2, sawThird) || strings.Contains(out2, "one-42") {
		t.Fatalf("reset recording: header %+v, output %q, client saw %q", h2, out2, sawThird)
	}
	if fi, err := os.Stat(filepath.Join(recDir, "web1")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("instance directory: %v %v", fi.Mode(), err)
	}
}
