package websock

import (
	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// pinSize pins the session's window size (zero: auto) for the page's pin
// control; the clients whose size it changes get a size event.
func (c *conn) pinSize(size sessions.Size) {
	cl := c.current()
	if cl == nil {
		return
	}
	pin := size.String()
	if size.IsZero() {
		pin = "auto"
	}
	if c.revokedNow() {
		return
	}
	if c.refused(keys.Pin, audit.Size, cl.Info().Session, "size", pin) {
		return
	}
	if err := cl.PinSize(size); err != nil {
		c.send(*errorFrame("pin-size failed: " + err.Error()))
		return
	}
	inst, detail := sessions.AuditAddr(c.name, "size", pin, "result", "ok")
	c.s.cfg.Audit.Event(audit.Size, c.who, inst, cl.Info().Session, detail...)
}
