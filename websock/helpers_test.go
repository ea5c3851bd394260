package websock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait in these tests.
const waitFor = 10 * time.Second

// Test tokens: tokAll may use every instance, tokWeb only web*, tokRO is
// read-only and limited to web*.
const (
	tokAll = "all-0123456789abcdef0123456789"
	tokWeb = "web-0123456789abcdef0123456789"
	tokRO  = "ro--0123456789abcdef0123456789"
)

type fakeTokens map[string]keys.Identity

func (f fakeTokens) Check(token string) (keys.Identity, bool) {
	id, ok := f[token]
	return id, ok
}

func (f fakeTokens) CheckHash(tokenHash []byte) (keys.Identity, bool) {
	for tok, id := range f {
		if bytes.Equal(keys.TokenHash(tok), tokenHash) {
			return id, true
		}
	}
	return keys.Identity{}, false
}

var testTokens = fakeTokens{
	tokAll: {Name: "alice", Kind: keys.KindToken, Grants: []keys.Grant{{}}},
	tokWeb: {Name: "webonly", Kind: keys.KindToken, Grants: []keys.Grant{{Instances: []string{"web*"}}}},
	tokRO:  {Name: "auditor", Kind: keys.KindToken, Grants: []keys.Grant{{Instances: []string{"web*"}, ReadOnly: true}}},
}

// env is a running gateway: a registry over a backend, the websock server
// and an httptest server in front of it.
type env struct {
	t    *testing.T
	reg  *sessions.Registry
	srv  *Server
	ts   *httptest.Server
	base string // http://127.0.0.1:PORT
}

// localBackend is the real PTY backend with a fixed set of instances.
func localBackend() sessions.Backend {
	return local.New(local.Config{Instances: []string{"web1", "web2", "db1"}, Dir: os.TempDir(), Logger: quietLog()})
}

func quietLog() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newEnv(t *testing.T, be sessions.Backend, regCfg func(*sessions.Config), cfg func(*Config)) *env {
	t.Helper()
	rc := sessions.Config{Backend: be, Logger: quietLog()}
	if regCfg != nil {
		regCfg(&rc)
	}
	reg, err := sessions.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	// The tests of other things make many requests, and many failing ones,
	// from 127.0.0.1: the rate limits are off unless a test turns them on
	// (limits_test.go).
	c := Config{Registry: reg, Tokens: testTokens, Logger: quietLog(), RequestRate: -1, AuthFailures: -1}
	if cfg != nil {
		cfg(&c)
	}
	srv, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	e := &env{t: t, reg: reg, srv: srv, ts: ts, base: ts.URL}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("websock shutdown: %v", err)
		}
		ts.Close()
		if err := reg.Shutdown(ctx); err != nil {
			t.Errorf("registry shutdown: %v", err)
		}
	})
	return e
}

func bearerHeader(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// dial opens a WebSocket to path (with its query). It returns the HTTP
// response too, for refused handshakes.
func (e *env) dial(path string, h http.Header) (*wsClient, *http.Response, error) {
	e.t.Helper()
	u := "ws" + strings.TrimPrefix(e.base, "http") + path
	d := websocket.Dialer{HandshakeTimeout: waitFor}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, resp, err := d.DialContext(ctx, u, h)
	if err != nil {
		return nil, resp, err
	}
	w := &wsClient{t: e.t, c: c}
	e.t.Cleanup(func() { _ = c.Close() })
	return w, resp, nil
}

// attach dials path with tokAll and returns the client and its attached
// event.
func (e *env) attach(path string) (*wsClient, event) {
	e.t.Helper()
	w, resp, err := e.dial(path, bearerHeader(tokAll))
	if err != nil {
		e.t.Fatalf("dial %s: %v (%s)", path, err, respText(resp))
	}
	ev := w.event("attached")
	return w, ev
}

// refused dials path and wants the handshake refused with status; it
// returns the JSON error message.
func (e *env) refused(path string, h http.Header, status int) string {
	e.t.Helper()
	w, resp, err := e.dial(path, h)
	if err == nil {
		w.c.Close()
		e.t.Fatalf("dial %s succeeded, want HTTP %d", path, status)
	}
	if resp == nil {
		e.t.Fatalf("dial %s: %v, want HTTP %d", path, err, status)
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		e.t.Fatalf("dial %s: HTTP %d %s, want %d", path, resp.StatusCode, respText(resp), status)
	}
	return errorMessage(e.t, resp.Body)
}

func respText(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b)
}

func errorMessage(t *testing.T, r io.Reader) string {
	t.Helper()
	var body struct {
		Error string `json:"error"`
	}
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		t.Fatalf("error body: %v", err)
	}
	return body.Error
}

// do sends an HTTP request to the gateway.
func (e *env) do(method, path string, h http.Header, body io.Reader) *http.Response {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	e.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, e.base+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// event is a decoded server event.
type event struct {
	Type     string `json:"type"`
	Instance string `json:"instance"`
	Session  string `json:"session"`
	New      bool   `json:"new"`
	Offset   int64  `json:"offset"`
	Gap      bool   `json:"gap"`
	Code     int    `json:"code"`
	Message  string `json:"message"`
	ReadOnly bool   `json:"read_only"`
	Replay   int    `json:"replay"`
	Bytes    int64  `json:"bytes"` // a skipped event's
	// Who, Via: a hand event's; By: a granted event's.
	Who, Via, By string
	// Cols, Rows, Pinned: a size event's (cols, rows: attached's too).
	Cols, Rows int
	Pinned     bool
	// Attached is a clients event's list.
	Attached []sessions.Attached `json:"attached"`
}

// wsClient is the test side of a connection. Only the test goroutine uses
// it; every read has a deadline.
type wsClient struct {
	t      *testing.T
	c      *websocket.Conn
	out    bytes.Buffer // every binary byte received
	events []event      // every text event received
}

// next reads one message, recording it.
func (w *wsClient) next(deadline time.Time) (int, []byte, error) {
	_ = w.c.SetReadDeadline(deadline)
	typ, data, err := w.c.ReadMessage()
	if err != nil {
		return 0, nil, err
	}
	switch typ {
	case websocket.BinaryMessage:
		w.out.Write(data)
	case websocket.TextMessage:
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			w.t.Fatalf("text frame is not JSON: %q", data)
		}
		w.events = append(w.events, ev)
	}
	return typ, data, nil
}

// event reads until an event of type typ arrives and returns it.
func (w *wsClient) event(typ string) event {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		mt, _, err := w.next(deadline)
		if err != nil {
			w.t.Fatalf("waiting for a %q event: %v (events so far %+v)", typ, err, w.events)
		}
		if mt == websocket.TextMessage {
			ev := w.events[len(w.events)-1]
			if ev.Type == typ {
				return ev
			}
			if ev.Type == "error" && typ != "error" {
				w.t.Fatalf("waiting for a %q event: got error %q", typ, ev.Message)
			}
		}
	}
}

// output reads until the binary output received from the mark on matches re,
// and returns the submatches.
func (w *wsClient) output(mark int, re *regexp.Regexp) []string {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if m := re.FindSubmatch(w.out.Bytes()[mark:]); m != nil {
			s := make([]string, len(m))
			for i := range m {
				s[i] = string(m[i])
			}
			return s
		}
		if _, _, err := w.next(deadline); err != nil {
			w.t.Fatalf("waiting for output %q: %v; got %q", re, err, w.out.Bytes()[mark:])
		}
	}
}

// atLeast reads until n bytes of output have arrived.
func (w *wsClient) atLeast(n int) {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	for w.out.Len() < n {
		if _, _, err := w.next(deadline); err != nil {
			w.t.Fatalf("waiting for %d bytes of output: %v; got %d: %q", n, err, w.out.Len(), w.out.Bytes())
		}
	}
}

// closeCode reads until the connection closes and returns the close code.
func (w *wsClient) closeCode() int {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		_, _, err := w.next(deadline)
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		w.t.Fatalf("waiting for a close frame: %v", err)
	}
}

func (w *wsClient) send(typ int, data []byte) {
	w.t.Helper()
	_ = w.c.SetWriteDeadline(time.Now().Add(waitFor))
	if err := w.c.WriteMessage(typ, data); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

func (w *wsClient) input(s string) { w.t.Helper(); w.send(websocket.BinaryMessage, []byte(s)) }

func (w *wsClient) control(s string) { w.t.Helper(); w.send(websocket.TextMessage, []byte(s)) }

// hangUp closes the connection politely and waits for the server's reply.
func (w *wsClient) hangUp() {
	w.t.Helper()
	_ = w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(waitFor))
	deadline := time.Now().Add(waitFor)
	for {
		if _, _, err := w.next(deadline); err != nil {
			break
		}
	}
	_ = w.c.Close()
}

// pid asks the shell for its process id; the marker around it makes the
// typed command's echo (which shows "$$") never match.
func (w *wsClient) pid() string {
	w.t.Helper()
	mark := w.out.Len()
	w.input("echo PID:$$:END\n")
	return w.output(mark, regexp.MustCompile(`PID:(\d+):END`))[1]
}

// waitClients polls the registry until the instance's session has n
// clients (the registry offers no notification).
func (e *env) waitClients(instance string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		got := -1
		for _, in := range e.reg.Sessions() {
			if in.Instance == instance {
				got = in.Clients
			}
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("instance %s: %d clients, want %d", instance, got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeBackend serves scripted processes: what a client types is echoed,
// and the test can emit output or end the shell. Instances are the names
// in known.
type fakeBackend struct {
	known map[string]bool

	watching chan struct{} // closed when Watch has set gone

	mu    sync.Mutex // guards procs and gone
	procs map[string]*fakeProc
	gone  func(sessions.InstanceEvent)
}

func newFakeBackend(names ...string) *fakeBackend {
	b := &fakeBackend{known: map[string]bool{}, procs: map[string]*fakeProc{}, watching: make(chan struct{})}
	for _, n := range names {
		b.known[n] = true
	}
	return b
}

func (b *fakeBackend) Lookup(_ context.Context, name string) (sessions.Instance, error) {
	if !b.known[name] {
		return sessions.Instance{}, sessions.ErrNotFound
	}
	return sessions.Instance{Name: name, ID: "fake:" + name}, nil
}

func (b *fakeBackend) Start(_ context.Context, inst sessions.Instance, spec sessions.StartSpec) (sessions.Process, error) {
	p := &fakeProc{out: make(chan []byte, 1024), gone: make(chan struct{}), exited: make(chan struct{}), size: spec.Size}
	b.mu.Lock()
	b.procs[inst.Name] = p
	b.mu.Unlock()
	return p, nil
}

func (b *fakeBackend) proc(name string) *fakeProc {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.procs[name]
}

func (b *fakeBackend) Watch(ctx context.Context, gone func(sessions.InstanceEvent)) error {
	b.mu.Lock()
	b.gone = gone
	b.mu.Unlock()
	close(b.watching)
	<-ctx.Done()
	return nil
}

// stop reports the instance stopped, as the Docker event stream would.
func (b *fakeBackend) stop(t *testing.T, name string) {
	t.Helper()
	b.event(t, sessions.InstanceEvent{Instance: sessions.Instance{Name: name, ID: "fake:" + name}, Gone: true})
}

// rename reports the instance renamed, as the Docker event stream would.
func (b *fakeBackend) rename(t *testing.T, from, to string) {
	t.Helper()
	b.event(t, sessions.InstanceEvent{Instance: sessions.Instance{Name: to, ID: "fake:" + from}})
}

// event reports ev once the registry watches.
func (b *fakeBackend) event(t *testing.T, ev sessions.InstanceEvent) {
	t.Helper()
	select {
	case <-b.watching:
	case <-time.After(waitFor):
		t.Fatal("the registry never called Watch")
	}
	b.mu.Lock()
	gone := b.gone
	b.mu.Unlock()
	gone(ev)
}

func (b *fakeBackend) Sweep(context.Context) error { return nil }
func (b *fakeBackend) Ping(context.Context) error  { return nil }

type fakeProc struct {
	out      chan []byte
	pending  []byte        // the rest of a chunk longer than a Read
	gone     chan struct{} // closed by Kill
	exited   chan struct{} // closed by exit
	killOnce sync.Once
	exitOnce sync.Once
	code     int

	mu   sync.Mutex // guards size
	size sessions.Size
}

// Read is called by the session's pump only.
func (p *fakeProc) Read(b []byte) (int, error) {
	if len(p.pending) == 0 {
		select {
		case p.pending = <-p.out:
		case <-p.gone:
			return 0, io.EOF
		case <-p.exited:
			return 0, &sessions.ExitError{Code: p.code} // Read ends with the cause
		}
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

// Write echoes the input as output.
func (p *fakeProc) Write(b []byte) (int, error) {
	p.emit(string(b))
	return len(b), nil
}

func (p *fakeProc) emit(s string) { p.out <- []byte(s) }

func (p *fakeProc) exit(code int) {
	p.exitOnce.Do(func() { p.code = code; close(p.exited) })
}

func (p *fakeProc) Resize(_ context.Context, size sessions.Size) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.size = size
	return nil
}

func (p *fakeProc) currentSize() sessions.Size {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size
}

func (p *fakeProc) Wait(context.Context) (int, error) {
	<-p.exited
	return p.code, nil
}

func (p *fakeProc) Kill(context.Context) error {
	p.killOnce.Do(func() { close(p.gone) })
	return nil
}

func query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}
