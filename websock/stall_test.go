package websock

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// TestShellNotReadingLeavesNoPhantomClients (issue 9 item 4): with a shell
// that does not read its input (stty raw -echo; sleep 1000), WebSocket
// clients that type and then vanish are detached within seconds, leaving
// neither attached clients nor goroutines behind; a client that stays is
// told once that its input is dropped and stays attached. Before, each
// message held the read loop for the whole input timeout (forever before
// that), so a client that left was never noticed.
func TestShellNotReadingLeavesNoPhantomClients(t *testing.T) {
	e := newEnv(t, localBackend(), func(c *sessions.Config) { c.InputTimeout = time.Second }, nil)
	setup, _ := e.attach(termPath)
	setup.input("stty raw -echo; echo RE''ADY; exec sleep 1000\n")
	setup.output(0, regexpQuote("READY"))
	setup.hangUp()
	e.waitClients("web1", 0)
	baseline := runtime.NumGoroutine()

	stay, _ := e.attach(termPath)
	const leavers, messages = 6, 40
	chunk := bytes.Repeat([]byte("x"), 4<<10)
	for i := 0; i < leavers; i++ {
		w, _ := e.attach(termPath)
		for j := 0; j < messages; j++ {
			w.send(websocket.BinaryMessage, chunk)
		}
		_ = w.c.NetConn().Close() // gone without a close frame, as a dropped network does
	}
	peak, left := runtime.NumGoroutine(), time.Now()
	stay.input(string(chunk))
	if ev := stay.event("error"); !strings.Contains(ev.Message, "not reading its input") {
		t.Errorf("the client that stays was told %q, want that the shell is not reading its input", ev.Message)
	}
	e.waitClients("web1", 1)
	t.Logf("%d clients that sent %d × 4 KiB to a shell not reading detached within %v of the last one leaving; goroutines %d before, %d while they left",
		leavers, messages, time.Since(left).Round(time.Millisecond), baseline, peak)
	stay.hangUp()
	e.waitClients("web1", 0)

	// The session's inputter runs only while input waits (sessions starts
	// it on demand), so the baseline has none; here it stays blocked in
	// its write to the shell that reads nothing until the session ends.
	// It belongs to the session, not to a client.
	const inputter = 1
	deadline := time.Now().Add(waitFor)
	for n := runtime.NumGoroutine(); n > baseline+inputter; n = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the clients came (+1: the session's inputter):\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientThatStopsReadingIsToldAndReleased (issue 10 items 3 and 4):
// a client that stops reading while the shell prints is dropped by the
// session; the gateway then closes its connection within seconds, not
// after the write timeout (60 s here), and the audit trail says it fell
// behind rather than reporting a network error. A client that reads again
// gets the "fell too far behind" error event and close 1013 first.
func TestClientThatStopsReadingIsToldAndReleased(t *testing.T) {
	var buf termtest.SyncBuffer
	be := newFakeBackend("web1")
	e := newEnv(t, be, func(c *sessions.Config) { c.ClientQueue = 8 << 20 }, func(c *Config) {
		c.Audit = audit.New(&buf)
		c.WriteTimeout = time.Minute
	})
	dial := func() *wsClient {
		w, resp, err := e.dial(termPath, bearerHeader(tokAll))
		if err != nil {
			t.Fatalf("dial: %v (%s)", err, respText(resp))
		}
		w.event("attached")
		return w
	}
	never, later := dial(), dial()
	e.waitClients("web1", 2)

	// Print until the session drops both (bounded: 256 MiB).
	out := strings.Repeat("y", 32<<10)
	for i := 0; clientsOf(e, "web1") > 0; i++ {
		if i == 8192 {
			t.Fatal("256 MiB of output and the clients that do not read are still attached")
		}
		be.proc("web1").emit(out)
	}

	// later reads again: the notice, then the close.
	deadline := time.Now().Add(waitFor)
	told := false
	for {
		typ, data, err := later.next(deadline)
		if err != nil {
			ce, ok := err.(*websocket.CloseError)
			if !ok || ce.Code != websocket.CloseTryAgainLater || !told {
				t.Fatalf("the client reading again: %v (told: %v), want the error event, then close 1013", err, told)
			}
			break
		}
		if typ == websocket.TextMessage && strings.Contains(string(data), "fell too far behind") {
			told = true
		}
		later.out.Reset()
	}

	// never's connection is closed and released within seconds.
	deadline = time.Now().Add(waitFor)
	for e.srv.connCount() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open %v after the clients were dropped (write timeout 1m)", e.srv.connCount(), waitFor)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, l := range auditLines(t, &buf) {
		if l["event"] == audit.Detach {
			if r, _ := l["reason"].(string); !strings.Contains(r, "fell too far behind") {
				t.Errorf("detach audited with reason %q, want that the client fell too far behind", r)
			}
		}
	}
	_ = never
}

// clientsOf returns how many clients the instance's session has (-1: no
// session).
func clientsOf(e *env, instance string) int {
	for _, in := range e.reg.Sessions() {
		if in.Instance == instance {
			return in.Clients
		}
	}
	return -1
}
