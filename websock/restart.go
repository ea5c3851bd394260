package websock

import (
	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

// A durable session (sessions.HeldProcess) outlives the gateway: when the
// gateway shuts down, its clients are told to come back rather than that
// the session is over. They get an error event saying so and the close
// code 1012 ("service restart"), which the page takes as "reconnect now";
// reconnecting with session and since lands them in the same shell with
// nothing missed.

// shutdownEnd is the final event and close code Server.Shutdown ends c
// with: 1012 when its session outlives the gateway, else 1001.
func (c *conn) shutdownEnd() (*frame, int) {
	if cl := c.current(); cl != nil && cl.Durable() {
		return errorFrame(sessions.ErrRestart.Error()), websocket.CloseServiceRestart
	}
	return errorFrame(msgShuttingDown), websocket.CloseGoingAway
}

// closeReason is the close frame's text for a code: the page and proxies
// log it.
func closeReason(code int) string {
	if code == websocket.CloseServiceRestart {
		return "service restart"
	}
	return ""
}
