package websock

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gorilla/websocket"
)

// A client that stops reading (a frozen tab, a phone in a tunnel) leaves
// the writer blocked in a write. With --replay screen that is no reason to
// drop it (contract, session semantics 8; issue 34 item 3: it was closed
// with 1013 after the 10 s write timeout): the write waits up to the
// liveness timeout (PongTimeout, 60 s by default; writeTimeout), the
// session meanwhile discards the output the client does not take (its
// queue overflows: sessions, skip.go), and when the client reads again it
// gets the skipped event, the current screen, then live output. Only a
// peer silent past the liveness timeout is disconnected: the read deadline,
// which every message and pong extends, ends the read loop, and readEnded
// ends the connection without waiting for the write in flight. With
// --replay raw the write timeout still drops the client (behind.go).

// readEnded handles the end of the read loop (err is why) before the
// connection is torn down. A peer silent for PongTimeout is dropped as one
// that fell behind is (endBehind): the frame in flight gets behindGrace,
// then an error event saying why and close 1013 go out, the frames still
// queued are skipped. For a peer that left, a write it does not take ends
// within closeGrace, not at its own deadline (up to the liveness timeout).
func (c *conn) readEnded(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		silent := fmt.Errorf("no answer from the client for %v (the liveness timeout); disconnected: reconnect to get the current screen", c.s.cfg.PongTimeout)
		c.log.Info("websocket client silent past the liveness timeout; disconnecting", "instance", c.name, "timeout", c.s.cfg.PongTimeout.String())
		c.setCause(silent)
		c.hurry.Store(true)
		c.end(errorFrame(silent.Error()), websocket.CloseTryAgainLater)
		_ = c.ws.NetConn().SetWriteDeadline(time.Now().Add(behindGrace))
		return
	}
	c.hurry.Store(true)
	_ = c.ws.NetConn().SetWriteDeadline(time.Now().Add(closeGrace))
}
