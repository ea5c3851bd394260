package websock

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

// served is a gateway behind Server.Serve on a real loopback listener
// (the connection caps apply there, not to Handler).
type served struct {
	t    *testing.T
	srv  *Server
	addr string // 127.0.0.1:PORT
}

func newServed(t *testing.T, cfg func(*Config)) *served {
	t.Helper()
	reg, err := sessions.New(sessions.Config{Backend: newFakeBackend("web1"), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Registry: reg, Tokens: testTokens, Logger: quietLog(), RequestRate: -1, AuthFailures: -1}
	if cfg != nil {
		cfg(&c)
	}
	srv, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := reg.Shutdown(ctx); err != nil {
			t.Errorf("registry shutdown: %v", err)
		}
	})
	return &served{t: t, srv: srv, addr: ln.Addr().String()}
}

// from dials the gateway from the loopback address ip (127.0.0.x).
func (s *served) from(ip string) net.Conn {
	s.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: waitFor}
	c, err := d.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("dial from %s: %v", ip, err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// get sends GET /healthz on c (keeping it alive) and returns the status
// and body; status 0 means the connection was closed instead.
func get(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(waitFor))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: termgate\r\n\r\n"); err != nil {
		return 0, err.Error()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// open reports whether the server still holds c open: a read that times
// out means open, EOF or a reset means closed.
func open(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ws attaches a WebSocket from ip.
func (s *served) ws(ip string) *websocket.Conn {
	s.t.Helper()
	nd := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: waitFor}
	d := websocket.Dialer{HandshakeTimeout: waitFor, NetDialContext: nd.DialContext}
	c, resp, err := d.Dial("ws://"+s.addr+termPath, bearerHeader(tokAll))
	if err != nil {
		s.t.Fatalf("websocket from %s: %v (%s)", ip, err, respText(resp))
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// waitIdle waits until the server has marked c idle (it does so after
// writing the response, so maybe after the client has read it).
func (s *served) waitIdle(c net.Conn) {
	s.t.Helper()
	local := c.LocalAddr().String()
	deadline := time.Now().Add(waitFor)
	for {
		s.srv.limits.mu.Lock()
		idle := false
		for _, conns := range s.srv.limits.byAddr {
			for lc := range conns {
				if lc.RemoteAddr().String() == local {
					idle = lc.idle
				}
			}
		}
		s.srv.limits.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the server never marked %s idle", local)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *served) count() int {
	s.srv.limits.mu.Lock()
	defer s.srv.limits.mu.Unlock()
	return s.srv.limits.n
}

func (s *served) waitCount(n int) {
	s.t.Helper()
	deadline := time.Now().Add(waitFor)
	for s.count() != n {
		if time.Now().After(deadline) {
			s.t.Fatalf("%d connections counted, want %d", s.count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConnectionCaps (issue 9 item 11c): one address cannot hold more than
// MaxConnsPerAddr connections: idle keep-alive ones make room for new ones
// (the oldest is closed), busy ones (WebSockets) cannot be pushed out, and
// a connection over the cap then gets 503; other addresses are not
// affected until the total cap, where the same rules apply.
func TestConnectionCaps(t *testing.T) {
	s := newServed(t, func(c *Config) { c.MaxConnsPerAddr = 4; c.MaxConns = 10 })

	// 10 keep-alive connections from one address, one after the other:
	// only the latest 4 stay open.
	var idle []net.Conn
	for i := 0; i < 10; i++ {
		c := s.from("127.0.0.2")
		if status, body := get(t, c); status != http.StatusOK {
			t.Fatalf("keep-alive connection %d: %d %s", i+1, status, body)
		}
		s.waitIdle(c)
		idle = append(idle, c)
	}
	for i, c := range idle {
		if want := i >= 6; open(c) != want {
			t.Errorf("keep-alive connection %d of 10 open: %v, want %v (the latest 4)", i+1, !want, want)
		}
	}

	// 4 WebSockets from another address fill its share; a fifth
	// connection is refused with a 503 that says why.
	for i := 0; i < 4; i++ {
		s.ws("127.0.0.3")
	}
	if status, body := get(t, s.from("127.0.0.3")); status != http.StatusServiceUnavailable || !strings.Contains(body, "too many connections") {
		t.Errorf("5th connection from an address holding 4 WebSockets: %d %q, want 503 too many connections", status, body)
	}
	other := s.from("127.0.0.4")
	if status, body := get(t, other); status != http.StatusOK {
		t.Errorf("another address meanwhile: %d %s, want 200", status, body)
	}
	s.waitIdle(other)

	// The total: close the idle ones, fill 10 with WebSockets; then an
	// eleventh connection, from a fresh address, is refused.
	for _, c := range idle {
		c.Close()
	}
	s.waitCount(4 + 1) // the 4 WebSockets and the .4 keep-alive
	for i := 0; i < 4; i++ {
		s.ws("127.0.0.5")
	}
	s.ws("127.0.0.9")
	if n := s.count(); n != 10 {
		t.Fatalf("%d connections, want 10", n)
	}
	// The .4 keep-alive is idle: it makes room for .6.
	six := s.from("127.0.0.6")
	if status, body := get(t, six); status != http.StatusOK {
		t.Errorf("a new address with the total full but one idle connection: %d %s, want 200", status, body)
	}
	s.waitIdle(six)
	s.ws("127.0.0.7") // takes .6's place, idle after its request
	if status, body := get(t, s.from("127.0.0.8")); status != http.StatusServiceUnavailable {
		t.Errorf("a new address with the total full of WebSockets: %d %q, want 503", status, body)
	}
}

// TestIdleConnectionsTimeOut: a keep-alive connection that sends no further
// request is closed after IdleTimeout.
func TestIdleConnectionsTimeOut(t *testing.T) {
	s := newServed(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	c := s.from("127.0.0.2")
	if status, body := get(t, c); status != http.StatusOK {
		t.Fatalf("GET: %d %s", status, body)
	}
	_ = c.SetReadDeadline(time.Now().Add(waitFor))
	if _, err := c.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Errorf("read after the idle timeout: %v, want the connection closed", err)
	}
	s.waitCount(0)
}
