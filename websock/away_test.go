package websock

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// awayFrame reads until the away event and returns it, decoded in full.
func (w *wsClient) awayFrame() awayEvent {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		mt, data, err := w.next(deadline)
		if err != nil {
			w.t.Fatalf("waiting for an away event: %v (events %+v, output %q)", err, w.events, w.out.Bytes())
		}
		if mt == websocket.TextMessage && strings.Contains(string(data), `"type":"away"`) {
			var ev awayEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				w.t.Fatal(err)
			}
			return ev
		}
	}
}

// The away event: a token that left and comes back gets, after the
// replay, how long, how many bytes, and the commands that finished with
// their exit statuses (OSC 133 marks); another token watching throughout
// gets none.
func TestAwayEvent(t *testing.T) {
	fb := newFakeBackend("web1")
	e := newEnv(t, fb, nil, nil)
	const path = "/api/instances/web1/terminal"
	a, _ := e.attach(path)
	p := fb.proc("web1")
	p.emit("hello\r\n")
	a.output(0, regexp.MustCompile("hello"))
	a.hangUp()
	e.waitClients("web1", 0)

	watcher, _, err := e.dial(path, bearerHeader(tokRO))
	if err != nil {
		t.Fatal(err)
	}
	watcher.event("attached")
	mark := func(p string) string { return "\x1b]133;" + p + "\x07" }
	out := mark("A") + "$ " + mark("B") + "make\r\n" + mark("C") + "ok\r\n" + mark("D;0") +
		mark("A") + "$ " + mark("B") + "make test\r\n" + mark("C") + "FAIL\r\n" + mark("D;2")
	p.emit(out)
	watcher.output(0, regexp.MustCompile("FAIL(?s:.*)D;2"))

	back, _ := e.attach(path)
	ev := back.awayFrame()
	if !strings.Contains(back.out.String(), "FAIL") {
		t.Errorf("the away event came before the replay: output %q", back.out.String())
	}
	if ev.Bytes != int64(len(out)) || !ev.Marked || ev.Finished != 2 || len(ev.Commands) != 2 || ev.Seconds < 0 {
		t.Fatalf("away event %+v, want %d bytes and 2 commands", ev, len(out))
	}
	for i, want := range []struct {
		cmd  string
		exit int
	}{{"make", 0}, {"make test", 2}} {
		c := ev.Commands[i]
		if _, err := time.Parse(time.RFC3339, c.At); err != nil || c.Command != want.cmd || c.Exit == nil || *c.Exit != want.exit {
			t.Errorf("command %d: %+v (at: %v), want %q exit %d", i, c, err, want.cmd, want.exit)
		}
	}
	if !strings.HasSuffix(ev.Summary, "2 commands finished: make (exit 0), make test (exit 2)") {
		t.Errorf("summary %q", ev.Summary)
	}
	// Still attached after it: input reaches the shell.
	back.input("still\n")
	back.output(0, regexp.MustCompile("still"))
	for _, e := range watcher.events {
		if e.Type == "away" {
			t.Errorf("the watcher, who never left, got an away event")
		}
	}
}
