package websock

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/termtest"
)

// dialSmall opens a WebSocket whose socket takes little data (a 256 KiB
// receive buffer: no autotuning), so that a client that stops reading soon leaves the
// gateway's write blocked.
func (e *env) dialSmall(path string) *wsClient {
	e.t.Helper()
	d := websocket.Dialer{
		HandshakeTimeout: waitFor,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(256 << 10)
			}
			return c, err
		},
	}
	u := "ws" + strings.TrimPrefix(e.base, "http") + path
	c, resp, err := d.Dial(u, bearerHeader(tokAll))
	if err != nil {
		e.t.Fatalf("dial %s: %v (%s)", path, err, respText(resp))
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return &wsClient{t: e.t, c: c}
}

// Issue 20 D6: a WebSocket client that stops reading while the shell
// prints (8 MB, under the client's queue: the write deadline is what cuts
// it) is dropped and the log says it fell behind, not that it detached on
// a network error; when it reads again it gets what was in flight, then
// the error event saying it was disconnected for falling behind, then a
// close frame (1013). This is the --replay raw behaviour (the registry's
// default replayer): the client is dropped and told so. Before, it was cut
// in the middle of a frame and only ever saw its connection end (1006).
func TestSlowClientIsToldItFellBehind(t *testing.T) {
	var logs termtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, localBackend(), nil, func(c *Config) {
		c.Logger = log
		c.WriteTimeout = time.Second
	})
	slow := e.dialSmall(termPath)
	slow.event("attached")
	slow.input("head -c 8000000 /dev/zero | tr '\\0' x; echo EN''D\n")
	// It reads no more. The gateway gives up on it and says why.
	deadline := time.Now().Add(waitFor)
	for !strings.Contains(logs.String(), "fell too far behind") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line says the client fell behind within %v:\n%s", waitFor, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.waitClients("web1", 0) // the session let it go at once

	// It reads again: the output in flight, the error event, the close.
	deadline = time.Now().Add(waitFor)
	for {
		typ, data, err := slow.next(deadline)
		if err != nil {
			t.Fatalf("the client that fell behind got no error event before the connection ended: %v (events %+v)\n%s", err, slow.events, logs.String())
		}
		if typ == websocket.TextMessage {
			ev := slow.events[len(slow.events)-1]
			if ev.Type != "error" || !strings.Contains(ev.Message, "fell too far behind") {
				t.Fatalf("the client that fell behind got %s, want an error event saying so", data)
			}
			break
		}
	}
	_, _, err := slow.next(time.Now().Add(waitFor))
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
		t.Fatalf("after the error event: %v, want a close frame 1013", err)
	}
	// The log tells what happened, not the network error that follows.
	deadline = time.Now().Add(waitFor)
	for !strings.Contains(logs.String(), "msg=\"websocket closed\"") {
		if time.Now().After(deadline) {
			t.Fatalf("no websocket closed line:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "websocket closed") && !strings.Contains(line, "fell too far behind") {
			t.Fatalf("the close is logged with another reason: %s", line)
		}
	}
}
