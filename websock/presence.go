package websock

import (
	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// Presence events and controls (issue 23 item 3; additions to the
// contract's frames): an observer's {"type":"raise-hand"} reaches the
// writers as {"type":"hand","who","via"}; a writer's
// {"type":"grant","who":NAME} gives that person's observer clients write
// access until a reset, and they get {"type":"granted","by"}.

type handEvent struct {
	Type string `json:"type"` // "hand"
	Who  string `json:"who"`
	Via  string `json:"via"`
}

type grantedEvent struct {
	Type string `json:"type"` // "granted"
	By   string `json:"by"`
}

// raiseHand asks the writers to let this observer type.
func (c *conn) raiseHand() {
	cl := c.current()
	if cl == nil {
		return
	}
	if err := cl.RaiseHand(); err != nil {
		c.send(*errorFrame(err.Error()))
		return
	}
	inst, detail := sessions.AuditAddr(c.name, "result", "ok")
	c.s.cfg.Audit.Event(audit.Hand, c.who, inst, cl.Info().Session, detail...)
}

// grant lets the observers named whom type until the session is reset.
func (c *conn) grant(whom string) {
	cl := c.current()
	if cl == nil {
		return
	}
	if c.revokedNow() {
		return
	}
	if c.refused(keys.GrantWrite, audit.Grant, cl.Info().Session, "to", whom) {
		return
	}
	n, err := cl.Grant(whom)
	if err != nil {
		c.send(*errorFrame("grant failed: " + err.Error()))
		return
	}
	inst, detail := sessions.AuditAddr(c.name, "to", whom, "clients", n, "result", "ok")
	c.s.cfg.Audit.Event(audit.Grant, c.who, inst, cl.Info().Session, detail...)
}
