package websock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

const termPath = "/api/instances/web1/terminal"

func TestAttachEchoAndReconnect(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, ev := e.attach(termPath + query("cols", "100", "rows", "30"))
	if ev.Instance != "web1" || ev.Session == "" || !ev.New || ev.Gap {
		t.Fatalf("first attach: %+v", ev)
	}
	if len(a.events) != 1 || a.out.Len() != 0 {
		t.Fatalf("attached must come first; got events %+v and %d output bytes before", a.events, a.out.Len())
	}
	pid := a.pid()
	a.hangUp()
	e.waitClients("web1", 0)

	b, ev2 := e.attach(termPath)
	if ev2.New || ev2.Session != ev.Session {
		t.Fatalf("reattach: %+v, want the session %s again", ev2, ev.Session)
	}
	// The replay shows the earlier command's output.
	b.output(0, regexp.MustCompile(`PID:`+pid+`:END`))
	if got := b.pid(); got != pid {
		t.Fatalf("reattach landed in shell %s, want %s", got, pid)
	}
}

func TestTwoClientsSeeOutput(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, _ := e.attach(termPath)
	b, _ := e.attach(termPath)
	ma, mb := a.out.Len(), b.out.Len()
	b.input("echo MARK-$((6*7))\n") // input from either client goes to the shell
	re := regexp.MustCompile(`MARK-42`)
	a.output(ma, re)
	b.output(mb, re)
}

func TestMalformedControlChangesNothing(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, _ := e.attach(termPath + query("cols", "90", "rows", "20"))
	stty := regexp.MustCompile(`SIZE:(\d+ \d+):END`)
	mark := a.out.Len()
	a.input("echo SIZE:$(stty size):END\n")
	if got := a.output(mark, stty)[1]; got != "20 90" {
		t.Fatalf("initial size: %q, want 20 90", got)
	}
	for _, tc := range []struct{ msg, want string }{
		{`{bad`, "malformed control message"},
		{`{"type":"nope"}`, "unknown control message type"},
		{`{"type":"resize","cols":100000,"rows":100000}`, "out of range"},
		{`{"type":"resize","cols":80}`, `needs "cols" and "rows"`},
	} {
		a.control(tc.msg)
		ev := a.event("error")
		if !strings.Contains(ev.Message, tc.want) {
			t.Errorf("%s: error %q, want it to mention %q", tc.msg, ev.Message, tc.want)
		}
	}
	// Nothing changed and the connection still works.
	mark = a.out.Len()
	a.input("echo SIZE:$(stty size):END\n")
	if got := a.output(mark, stty)[1]; got != "20 90" {
		t.Fatalf("size after refused resizes: %q, want 20 90", got)
	}
}

func TestResetByControlMessage(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, first := e.attach(termPath + query("cols", "100", "rows", "30"))
	old := a.pid()
	a.control(`{"type":"reset"}`)
	ev := a.event("reset")
	if ev.Session == "" || ev.Session == first.Session {
		t.Fatalf("reset event %+v, want a new session (old %s)", ev, first.Session)
	}
	if now := a.pid(); now == old {
		t.Fatalf("same shell %s after reset", now)
	}
	// The reattach kept the client's size.
	mark := a.out.Len()
	a.input("echo SIZE:$(stty size):END\n")
	if got := a.output(mark, regexp.MustCompile(`SIZE:(\d+ \d+):END`))[1]; got != "30 100" {
		t.Fatalf("size after reset: %q, want 30 100", got)
	}
	// A new client lands in the new session.
	_, ev2 := e.attach(termPath)
	if ev2.Session != ev.Session {
		t.Fatalf("attach after reset: session %s, want %s", ev2.Session, ev.Session)
	}
}

func TestResetByPOSTMovesAttachedClient(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, first := e.attach(termPath)
	old := a.pid()
	resp := e.do("POST", termPath+"/reset", bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %s", respText(resp))
	}
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body["instance"] != "web1" || body["session"] == "" || body["session"] == first.Session {
		t.Fatalf("reset answer %v", body)
	}
	ev := a.event("reset")
	if ev.Session != body["session"] {
		t.Fatalf("reset event session %s, POST said %s", ev.Session, body["session"])
	}
	if now := a.pid(); now == old {
		t.Fatalf("same shell %s after reset", now)
	}
}

func TestShellExitSendsExitEvent(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, _ := e.attach(termPath)
	a.input("exit 3\n")
	if ev := a.event("exit"); ev.Code != 3 {
		t.Fatalf("exit event %+v, want code 3", ev)
	}
	if code := a.closeCode(); code != websocket.CloseNormalClosure {
		t.Fatalf("close code %d, want 1000", code)
	}
}

func TestOversizedFrameCloses1009(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, _ := e.attach(termPath)
	b, _ := e.attach(termPath)
	other, _ := e.attach("/api/instances/web2/terminal")
	pid := b.pid()

	a.send(websocket.BinaryMessage, bytes.Repeat([]byte("x"), maxMessage+1))
	if code := a.closeCode(); code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d, want 1009", code)
	}
	// The session and the other clients are unaffected, and nothing of the
	// oversized message reached the shell.
	if got := b.pid(); got != pid {
		t.Fatalf("shell changed: %s, was %s", got, pid)
	}
	if bytes.Contains(b.out.Bytes(), []byte("xxxx")) {
		t.Fatal("part of the oversized message reached the shell")
	}
	other.pid()
	e.waitClients("web1", 1)
}

func TestAttachQueryValidation(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	h := bearerHeader(tokAll)
	for _, q := range []string{
		query("cols", "0", "rows", "24"),
		query("cols", "80", "rows", "100000"),
		query("cols", "1001", "rows", "24"),
		query("cols", "-1", "rows", "24"),
		query("cols", "80"),
		query("cols", "abc", "rows", "24"),
		query("since", "5"),
		query("session", "abc", "since", "-1"),
		query("session", strings.Repeat("a", 65)),
	} {
		e.refused(termPath+q, h, http.StatusBadRequest)
	}
	if len(e.reg.Sessions()) != 0 {
		t.Fatal("a refused attach started a session")
	}
}

func TestInstanceNames(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	h := bearerHeader(tokAll)
	for _, name := range []string{"-bad", ".hidden", "bad%20name", "bad%3Bname", strings.Repeat("a", 129)} {
		msg := e.refused("/api/instances/"+name+"/terminal", h, http.StatusBadRequest)
		if !strings.Contains(msg, "invalid instance name") {
			t.Errorf("%s: message %q", name, msg)
		}
		if resp := e.do("POST", "/api/instances/"+name+"/terminal/reset", h, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("reset %s: %s, want 400", name, respText(resp))
		}
	}
	want := `instance "nope" not found or not running`
	if msg := e.refused("/api/instances/nope/terminal", h, http.StatusNotFound); msg != want {
		t.Errorf("unknown instance: %q, want %q", msg, want)
	}
	resp := e.do("POST", "/api/instances/nope/terminal/reset", h, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("reset unknown: %s", respText(resp))
	}
	if msg := errorMessage(t, resp.Body); msg != want {
		t.Errorf("reset unknown: %q, want %q", msg, want)
	}
}

func TestPermissionsLookLikeUnknownInstances(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	e.attach("/api/instances/web1/terminal")
	e.attach("/api/instances/db1/terminal")
	web := bearerHeader(tokWeb)

	want := `instance "db1" not found or not running`
	if msg := e.refused("/api/instances/db1/terminal", web, http.StatusNotFound); msg != want {
		t.Errorf("attach db1: %q, want %q", msg, want)
	}
	resp := e.do("POST", "/api/instances/db1/terminal/reset", web, nil)
	if resp.StatusCode != http.StatusNotFound || errorMessage(t, resp.Body) != want {
		t.Errorf("reset db1: HTTP %d, want 404 %q", resp.StatusCode, want)
	}
	if got := listInstances(t, e, web); got != "web1" {
		t.Errorf("webonly lists %q, want web1", got)
	}
	if got := listInstances(t, e, bearerHeader(tokAll)); got != "web1,db1" {
		t.Errorf("alice lists %q, want web1,db1", got)
	}
	// The limited token works where it may.
	w, _, err := e.dial("/api/instances/web1/terminal", web)
	if err != nil {
		t.Fatal(err)
	}
	w.event("attached")
}

func listInstances(t *testing.T, e *env, h http.Header) string {
	t.Helper()
	resp := e.do("GET", "/api/sessions", h, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list: %s", respText(resp))
	}
	var list []sessions.Info
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range list {
		names = append(names, in.Instance)
		if in.Session == "" || in.Created.IsZero() {
			t.Errorf("incomplete entry %+v", in)
		}
	}
	return strings.Join(names, ",")
}

func TestShutdownTellsClients(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, _ := e.attach(termPath)
	b, _ := e.attach("/api/instances/web2/terminal")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- e.srv.Shutdown(ctx) }()
	for _, w := range []*wsClient{a, b} {
		if ev := w.event("error"); ev.Message != "gateway is shutting down" {
			t.Errorf("shutdown event %+v", ev)
		}
		if code := w.closeCode(); code != websocket.CloseGoingAway {
			t.Errorf("close code %d, want 1001", code)
		}
	}
	// The clients answered the close: Shutdown need not wait out closeGrace.
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d >= closeGrace {
		t.Errorf("shutdown took %v", d)
	}
	// The sessions survive the listener; new attaches are refused.
	if n := len(e.reg.Sessions()); n != 2 {
		t.Errorf("%d sessions after the listener's shutdown, want 2", n)
	}
	e.refused(termPath, bearerHeader(tokAll), http.StatusServiceUnavailable)
}

func TestSilentPeerIsDropped(t *testing.T) {
	const pongTimeout = 500 * time.Millisecond
	e := newEnv(t, localBackend(), nil, func(c *Config) {
		c.PingInterval = 50 * time.Millisecond
		c.PongTimeout = pongTimeout
	})
	// A client that reads answers pings (gorilla does it inside reads).
	a, _ := e.attach(termPath)
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, _, err := a.c.ReadMessage(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	start := time.Now()
	// A client that never reads never answers them, and is dropped.
	if _, resp, err := e.dial(termPath, bearerHeader(tokAll)); err != nil {
		t.Fatalf("dial: %v (%s)", err, respText(resp))
	}
	e.waitClients("web1", 2)
	e.waitClients("web1", 1)
	if d := time.Since(start); d < pongTimeout {
		t.Errorf("silent client dropped after %v, before the pong timeout", d)
	}
	// The reading client stays for several pong timeouts.
	select {
	case err := <-readErr:
		t.Fatalf("reading client dropped: %v", err)
	case <-time.After(3*pongTimeout - time.Since(start)):
	}
	_ = a.c.SetReadDeadline(time.Now())
	var ne net.Error
	if err := <-readErr; !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("reading client: %v, want it alive until the test stopped it", err)
	}
}
