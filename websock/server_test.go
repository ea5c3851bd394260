package websock

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

func TestNewChecksConfig(t *testing.T) {
	reg, err := sessions.New(sessions.Config{Backend: newFakeBackend()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no registry", Config{Tokens: testTokens}, "no session registry"},
		{"no tokens", Config{Registry: reg}, "no token checker"},
		{"bad origin", Config{Registry: reg, Tokens: testTokens, AllowedOrigins: []string{"*"}}, `allowed origin "*"`},
		{"ping too slow", Config{Registry: reg, Tokens: testTokens, PingInterval: time.Minute}, "PingInterval"},
		{"short cookie key", Config{Registry: reg, Tokens: testTokens, CookieKey: make([]byte, 31)}, "CookieKey has 31 bytes"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}

// Serve and Shutdown over a real listener; a client that never answers the
// close is cut off when Shutdown's context ends.
func TestServeAndShutdownDeadline(t *testing.T) {
	be := newFakeBackend("web1")
	reg, err := sessions.New(sessions.Config{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := reg.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	srv, err := New(Config{Registry: reg, Tokens: testTokens, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	d := websocket.Dialer{HandshakeTimeout: waitFor}
	c, resp, err := d.Dial("ws://"+l.Addr().String()+termPath, bearerHeader(tokAll))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, respText(resp))
	}
	defer c.Close()
	w := &wsClient{t: t, c: c}
	w.event("attached")
	// From now on the client reads nothing, so it never answers the close.

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v, want the deadline", err)
	}
	if d := time.Since(start); d > closeGrace {
		t.Errorf("shutdown took %v", d)
	}
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Serve did not return")
	}
	// What the client got before the cut: the event, then the close.
	if ev := w.event("error"); ev.Message != msgShuttingDown {
		t.Errorf("event %+v", ev)
	}
}
