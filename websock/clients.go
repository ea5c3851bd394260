package websock

import "github.com/termgate/termgate/sessions"

// clientsEvent says who is attached to the connection's session (issue 12
// item 2): sent, to a connection that asked with ?clients=1 (the page
// does; other programs get no event they do not expect), after the
// attached event and whenever a client attaches or leaves, so the page's
// list stays live. The audience is the same as GET
// /api/sessions': credentials allowed on the instance.
type clientsEvent struct {
	Type     string              `json:"type"` // "clients"
	Attached []sessions.Attached `json:"attached"`
}

// watchClients sends a clients event for the current attach and again at
// every change of who is attached (sessions.Client.AttachedChanges), and
// follows the attach to the new session after a reset once its reset
// event is sent, so the events keep their order. It returns when the
// connection's context ends or the writer is gone.
func (c *conn) watchClients() {
	defer close(c.watchDone)
	for {
		c.mu.Lock()
		cl, moved, told := c.told, c.moved, c.toldSession
		c.mu.Unlock()
		if cl == nil {
			return
		}
		list, changed := cl.AttachedChanges()
		switch {
		case cl.Info().Session != told:
			changed = moved // moved by a reset, not told yet: wait for the reset event
			list = nil
		case list == nil:
			changed = nil // the session ends under the attach: its empty list is not news
		}
		if list == nil {
			select {
			case <-changed:
				continue
			case <-moved:
				continue
			case <-c.ctx.Done(): // also after an end: nothing follows it
				return
			}
		}
		if !c.send(eventFrame(clientsEvent{Type: "clients", Attached: list})) {
			return
		}
		select {
		case <-changed:
		case <-moved:
		case <-c.ctx.Done():
			return
		}
	}
}
