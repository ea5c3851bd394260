package websock

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

// waitBytesOut polls until the instance's session has produced n bytes
// (output reaches the ring asynchronously, through the session's pump).
func (e *env) waitBytesOut(instance string, n int64) {
	e.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var got int64 = -1
		for _, in := range e.reg.Sessions() {
			if in.Instance == instance {
				got = in.BytesOut
			}
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("instance %s produced %d bytes, want %d", instance, got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The fake backend echoes input and emits what the test says, so every
// output byte is known and the resume arithmetic can be checked exactly.
func TestResume(t *testing.T) {
	be := newFakeBackend("res")
	e := newEnv(t, be, func(c *sessions.Config) { c.BufferSize = sessions.MinBufferSize }, nil)
	const path = "/api/instances/res/terminal"

	a, ev := e.attach(path)
	if !ev.New || ev.Offset != 0 || ev.Gap {
		t.Fatalf("first attach %+v", ev)
	}
	a.input("hello\n") // echoed
	a.atLeast(6)
	be.proc("res").emit("world\n")
	a.atLeast(12)
	// The client numbers what it got from offset 0: "world\n" starts at 6.
	if a.out.String() != "hello\nworld\n" {
		t.Fatalf("output %q", a.out.String())
	}
	a.hangUp()
	e.waitClients("res", 0)
	be.proc("res").emit("after\n") // produced while nobody is attached
	e.waitBytesOut("res", 18)

	t.Run("exact", func(t *testing.T) {
		b, ev := e.attach(path + query("session", ev.Session, "since", "6"))
		if ev.Gap || ev.New || ev.Session == "" || ev.Offset != 18 {
			t.Fatalf("resume attach %+v, want offset 18 without gap", ev)
		}
		b.atLeast(12)
		be.proc("res").emit("live\n")
		b.atLeast(17)
		if got := b.out.String(); got != "world\nafter\nlive\n" {
			t.Fatalf("resumed output %q, want exactly the bytes from 6 on", got)
		}
		b.hangUp()
		e.waitClients("res", 0)
	})
	t.Run("nothing missed", func(t *testing.T) {
		b, ev := e.attach(path + query("session", ev.Session, "since", "23"))
		if ev.Gap || ev.Offset != 23 {
			t.Fatalf("resume at the end: %+v", ev)
		}
		be.proc("res").emit("next\n")
		b.atLeast(5)
		if got := b.out.String(); got != "next\n" {
			t.Fatalf("output %q, want only the live bytes", got)
		}
		b.hangUp()
		e.waitClients("res", 0)
	})
	t.Run("stale session id", func(t *testing.T) {
		b, ev2 := e.attach(path + query("session", "0123456789abcdef", "since", "6"))
		if ev2.Gap || ev2.Session != ev.Session || ev2.Offset != 28 {
			t.Fatalf("stale resume %+v, want the current session's normal replay", ev2)
		}
		b.atLeast(28)
		if got := b.out.String(); got != "hello\nworld\nafter\nlive\nnext\n" {
			t.Fatalf("replay %q", got)
		}
		b.hangUp()
		e.waitClients("res", 0)
	})
	t.Run("fell off the ring", func(t *testing.T) {
		var all strings.Builder
		for i := range 40 { // 40 lines of 512 bytes: twice the ring
			line := fmt.Sprintf("%04d%s\n", i, strings.Repeat("z", 507))
			all.WriteString(line)
			be.proc("res").emit(line)
		}
		total := int64(28 + all.Len())
		e.waitBytesOut("res", total)
		b, ev2 := e.attach(path + query("session", ev.Session, "since", "6"))
		if !ev2.Gap || ev2.Offset != total {
			t.Fatalf("resume from a lost offset: %+v, want gap and offset %d", ev2, total)
		}
		be.proc("res").emit("tail\n")
		b.output(0, regexpQuote("tail\n"))
		got := b.out.String()
		want := all.String() + "tail\n"
		// The normal replay: whole lines from the end of the ring.
		if len(got) > sessions.MinBufferSize+5 || !strings.HasSuffix(want, got) || got[4] != 'z' {
			t.Fatalf("replay after a gap: %d bytes %q…", len(got), got[:min(len(got), 40)])
		}
	})
}

// A message of exactly 1 MiB is accepted (the limit is inclusive).
func TestMessageAtTheLimit(t *testing.T) {
	be := newFakeBackend("big")
	e := newEnv(t, be, nil, nil)
	a, _ := e.attach("/api/instances/big/terminal")
	msg := bytes.Repeat([]byte("y"), maxMessage)
	a.send(websocket.BinaryMessage, msg)
	a.atLeast(maxMessage)
	if !bytes.Equal(a.out.Bytes(), msg) {
		t.Fatal("echo differs from the input")
	}
}

func TestFirstFramesAreAttachedThenReplay(t *testing.T) {
	be := newFakeBackend("ord")
	e := newEnv(t, be, nil, nil)
	a, _ := e.attach("/api/instances/ord/terminal")
	a.input("one\n")
	a.atLeast(4)
	a.hangUp()
	e.waitClients("ord", 0)

	w, resp, err := e.dial("/api/instances/ord/terminal", bearerHeader(tokAll))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, respText(resp))
	}
	deadline := time.Now().Add(waitFor)
	typ, data, err := w.next(deadline)
	if err != nil || typ != websocket.TextMessage || !bytes.Contains(data, []byte(`"type":"attached"`)) {
		t.Fatalf("first frame: type %d %q %v", typ, data, err)
	}
	typ, data, err = w.next(deadline)
	if err != nil || typ != websocket.BinaryMessage || string(data) != "one\n" {
		t.Fatalf("second frame: type %d %q %v, want the binary replay", typ, data, err)
	}
}

func regexpQuote(s string) *regexp.Regexp { return regexp.MustCompile(regexp.QuoteMeta(s)) }
