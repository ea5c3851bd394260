package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
)

// ---- output streams ----

// stream accumulates output and lets a test wait for a pattern in it.
type stream struct{ *termtest.Stream }

func newStream() *stream { return &stream{termtest.NewStream()} }

// waitFor waits, at most waitFor, until re matches the stream from offset
// from on; it returns the submatches and the offset just after the match,
// or nil and from.
func (s *stream) waitFor(re *regexp.Regexp, from int) ([]string, int) {
	return s.WaitFor(re, from, waitFor)
}

// tags makes the markers that tests echo unique within a run.
var tags atomic.Int64

// marker returns a shell command that prints a new unique word, and that
// word. The command line (which the terminal echoes) does not contain the
// word: `echo M17-$((40+2))` prints M17-42.
func marker(prefix string) (cmd, word string) {
	n := tags.Add(1)
	return fmt.Sprintf("echo %s%d-$((40+2))", prefix, n), fmt.Sprintf("%s%d-42", prefix, n)
}

// ---- SSH ----

func (g *gateway) sshConfig(key, user string) *gossh.ClientConfig {
	return termtest.ClientConfig(user, g.signers[key], g.hostKey, waitFor)
}

// dialSSH opens an SSH connection with the named key; the test closes it.
func (g *gateway) dialSSH(t *testing.T, key, user string) (*gossh.Client, error) {
	t.Helper()
	c, err := gossh.Dial("tcp", g.sshAddr, g.sshConfig(key, user))
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

func (g *gateway) dial(t *testing.T, key, user string) *gossh.Client {
	t.Helper()
	c, err := g.dialSSH(t, key, user)
	if err != nil {
		t.Fatalf("ssh %s@ with key %s: %v", user, key, err)
	}
	return c
}

// result is what a finished SSH command left.
type result struct {
	stdout, stderr string
	code           int
}

// ssh runs a command (no PTY) over a new connection.
func (g *gateway) ssh(t *testing.T, key, user, cmd string) result {
	t.Helper()
	c := g.dial(t, key, user)
	defer c.Close()
	r := termtest.Run(t, c, cmd, waitFor)
	return result{r.Stdout, r.Stderr, r.Code}
}

// term is an interactive SSH session with a PTY.
type term struct {
	t      *testing.T
	client *gossh.Client
	sess   *gossh.Session
	stdin  io.WriteCloser
	out    *stream       // stdout: the terminal
	errOut *stream       // stderr: gateway messages
	ended  chan struct{} // closed when Session.Wait returned
	err    error         // Session.Wait's result; read after ended
	seen   int           // out offset already consumed by expect
}

// attach opens a connection as user instance with the named key and
// attaches with a PTY of cols x rows (0x0: size unknown).
func (g *gateway) attach(t *testing.T, key, instance string, cols, rows int) *term {
	t.Helper()
	c := g.dial(t, key, instance)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, client: c, sess: s, out: newStream(), errOut: newStream(), ended: make(chan struct{})}
	s.Stdout, s.Stderr = tm.out, tm.errOut
	if tm.stdin, err = s.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", rows, cols, gossh.TerminalModes{}); err != nil {
		t.Fatalf("pty-req: %v", err)
	}
	if err := s.Shell(); err != nil {
		t.Fatalf("shell: %v", err)
	}
	go func() {
		tm.err = s.Wait()
		close(tm.ended)
	}()
	t.Cleanup(func() {
		_ = c.Close()
		<-tm.ended
	})
	return tm
}

// send types a line.
func (tm *term) send(line string) {
	tm.t.Helper()
	if _, err := io.WriteString(tm.stdin, line+"\r"); err != nil {
		tm.t.Fatalf("ssh: type %q: %v", line, err)
	}
}

// expect waits for re in the terminal output after what earlier expects
// consumed, and returns the submatches.
func (tm *term) expect(re string) []string {
	tm.t.Helper()
	m, at := tm.out.waitFor(regexp.MustCompile(re), tm.seen)
	if m == nil {
		tm.t.Fatalf("ssh: no %q in the output within %s:\n%q\nstderr: %q", re, waitFor, tm.out.String()[tm.seen:], tm.errOut.String())
	}
	tm.seen = at
	return m
}

// expectErr waits for re on stderr.
func (tm *term) expectErr(re string) []string {
	tm.t.Helper()
	m, _ := tm.errOut.waitFor(regexp.MustCompile(re), 0)
	if m == nil {
		tm.t.Fatalf("ssh: no %q on stderr within %s: %q\nstdout: %q", re, waitFor, tm.errOut.String(), tm.out.String()[tm.seen:])
	}
	return m
}

// roundTrip types a unique marker echo and waits for its output.
func (tm *term) roundTrip() {
	tm.t.Helper()
	cmd, word := marker("ssh")
	tm.send(cmd)
	tm.expect(regexp.QuoteMeta(word))
}

// pid asks the shell for its PID.
func (tm *term) pid() int {
	tm.t.Helper()
	tag := fmt.Sprintf("pid%d", tags.Add(1))
	tm.send("echo " + tag + "=$$")
	pid, err := strconv.Atoi(tm.expect(tag + `=(\d+)`)[1])
	if err != nil {
		tm.t.Fatal(err)
	}
	return pid
}

// close drops the connection (a detach).
func (tm *term) close() {
	_ = tm.client.Close()
	<-tm.ended
}

// wait waits for the session to end and returns Wait's error.
func (tm *term) wait() error {
	tm.t.Helper()
	timer := time.NewTimer(waitFor)
	defer timer.Stop()
	select {
	case <-tm.ended:
		return tm.err
	case <-timer.C:
		tm.t.Fatalf("ssh: the session did not end within %s; stdout %q, stderr %q", waitFor, tm.out.String()[tm.seen:], tm.errOut.String())
	}
	return nil
}

// ---- WebSocket ----

// wsEvent is a server → client text frame.
type wsEvent struct {
	Type     string `json:"type"`
	Instance string `json:"instance"`
	Session  string `json:"session"`
	New      bool   `json:"new"`
	Offset   int64  `json:"offset"`
	Gap      bool   `json:"gap"`
	Code     int    `json:"code"`
	Message  string `json:"message"`
	raw      string
}

// wsClient is an attached WebSocket client; a goroutine reads every frame.
type wsClient struct {
	t        *testing.T
	conn     *websocket.Conn
	out      *stream // binary frames: the terminal
	attached wsEvent

	mu      sync.Mutex // guards events and changed
	events  []wsEvent
	changed chan struct{}
	next    int // events consumed by nextEvent

	closed  chan struct{} // the read loop ended
	readErr error         // why; read after closed
	seen    int           // out offset consumed by expect
}

// wsURL is the terminal URL of an instance (name is path-escaped).
func (g *gateway) wsURL(instance, query string) string {
	u := "ws://" + g.httpAddr + "/api/instances/" + url.PathEscape(instance) + "/terminal"
	if query != "" {
		u += "?" + query
	}
	return u
}

// dialWS opens a WebSocket with the given headers; on success its frames
// are read until the test ends.
func (g *gateway) dialWS(t *testing.T, instance, query string, hdr http.Header) (*wsClient, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitFor}
	conn, resp, err := d.Dial(g.wsURL(instance, query), hdr)
	if err != nil {
		return nil, resp, err
	}
	w := &wsClient{t: t, conn: conn, out: newStream(), changed: make(chan struct{}), closed: make(chan struct{})}
	go w.read()
	t.Cleanup(func() {
		_ = conn.Close()
		<-w.closed
	})
	return w, resp, nil
}

// ws attaches over a WebSocket with the named token and waits for the
// attached event.
func (g *gateway) ws(t *testing.T, token, instance string) *wsClient {
	t.Helper()
	return g.wsAttach(t, token, instance, "")
}

// wsQuery attaches with the admin token and a query (resume, size).
func (g *gateway) wsQuery(t *testing.T, instance, query string) *wsClient {
	t.Helper()
	return g.wsAttach(t, tokAdmin, instance, query)
}

func (g *gateway) wsAttach(t *testing.T, token, instance, query string) *wsClient {
	t.Helper()
	w, resp, err := g.dialWS(t, instance, query, bearer(g.tokens[token]))
	if err != nil {
		t.Fatalf("websocket to %s: %v (%s)", instance, err, describeResponse(resp))
	}
	w.attached = w.nextEvent()
	if w.attached.Type != "attached" || w.attached.Instance != instance || w.attached.Session == "" {
		t.Fatalf("websocket: first event %s, want attached to %s", w.attached.raw, instance)
	}
	return w
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

func describeResponse(resp *http.Response) string {
	if resp == nil {
		return "no HTTP response"
	}
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("HTTP %s: %s", resp.Status, bytes.TrimSpace(body))
}

func (w *wsClient) read() {
	defer close(w.closed)
	for {
		typ, data, err := w.conn.ReadMessage()
		if err != nil {
			w.readErr = err
			return
		}
		switch typ {
		case websocket.BinaryMessage:
			_, _ = w.out.Write(data)
		case websocket.TextMessage:
			ev := wsEvent{raw: string(data)}
			if err := json.Unmarshal(data, &ev); err != nil {
				ev = wsEvent{Type: "(not JSON)", raw: string(data)}
			}
			w.mu.Lock()
			w.events = append(w.events, ev)
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}
}

// closeWS drops the connection (a detach) and waits for its reader.
func closeWS(w *wsClient) {
	_ = w.conn.Close()
	<-w.closed
}

// nextEvent waits for the next text event.
func (w *wsClient) nextEvent() wsEvent {
	w.t.Helper()
	timer := time.NewTimer(waitFor)
	defer timer.Stop()
	for {
		w.mu.Lock()
		if w.next < len(w.events) {
			ev := w.events[w.next]
			w.next++
			w.mu.Unlock()
			return ev
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-w.closed:
			w.mu.Lock()
			more := w.next < len(w.events)
			w.mu.Unlock()
			if !more {
				w.t.Fatalf("websocket: closed (%v) while waiting for an event", w.readErr)
			}
		case <-timer.C:
			w.t.Fatalf("websocket: no event within %s", waitFor)
		}
	}
}

// pendingEvents returns the events nextEvent has not returned yet.
func (w *wsClient) pendingEvents() []wsEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wsEvent(nil), w.events[w.next:]...)
}

// send types a line (a binary frame).
func (w *wsClient) send(line string) {
	w.t.Helper()
	if err := w.conn.WriteMessage(websocket.BinaryMessage, []byte(line+"\r")); err != nil {
		w.t.Fatalf("websocket: type %q: %v", line, err)
	}
}

// control sends a text frame.
func (w *wsClient) control(msg string) {
	w.t.Helper()
	if err := w.conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		w.t.Fatalf("websocket: send %s: %v", msg, err)
	}
}

// expect waits for re in the output after what earlier expects consumed.
func (w *wsClient) expect(re string) []string {
	w.t.Helper()
	m, at := w.out.waitFor(regexp.MustCompile(re), w.seen)
	if m == nil {
		w.t.Fatalf("websocket: no %q in the output within %s:\n%q\nevents: %v", re, waitFor, w.out.String()[w.seen:], w.pendingEvents())
	}
	w.seen = at
	return m
}

// roundTrip types a unique marker echo and waits for its output.
func (w *wsClient) roundTrip() {
	w.t.Helper()
	cmd, word := marker("ws")
	w.send(cmd)
	w.expect(regexp.QuoteMeta(word))
}

// waitClosed waits for the connection to end and returns the close code
// the server sent (0 when it ended without a close frame).
func (w *wsClient) waitClosed() int {
	w.t.Helper()
	timer := time.NewTimer(waitFor)
	defer timer.Stop()
	select {
	case <-w.closed:
	case <-timer.C:
		w.t.Fatalf("websocket: still open %s later", waitFor)
	}
	var ce *websocket.CloseError
	if errors.As(w.readErr, &ce) {
		return ce.Code
	}
	return 0
}
