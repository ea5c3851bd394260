package holder

import (
	"fmt"
)

// handle acts on one frame from a gateway.
func (c *conn) handle(f Frame) error {
	switch f.Type {
	case TypeAttach:
		var m AttachMsg
		if err := DecodeControl(f, &m); err != nil {
			return err
		}
		c.attach(m)
	case TypeInput:
		c.h.mu.Lock()
		sh := c.h.shell
		c.h.mu.Unlock()
		if sh == nil {
			return nil // between a reset's kill and its fresh shell: dropped
		}
		// The frame's buffer is reused by the next read: write it now.
		// A shell that does not read blocks this connection only; the
		// gateway's own input deadline takes care of its clients.
		if _, err := sh.pty.Write(f.Payload); err != nil {
			return fmt.Errorf("write to the shell: %w", err)
		}
	case TypeResize:
		cols, rows, err := DecodeResize(f)
		if err != nil {
			return err
		}
		c.h.mu.Lock()
		c.h.cols, c.h.rows = cols, rows
		sh := c.h.shell
		c.h.mu.Unlock()
		if sh != nil {
			return sh.resize(cols, rows)
		}
	case TypeClients:
		n, err := DecodeClients(f)
		if err != nil {
			return err
		}
		c.h.mu.Lock()
		c.clients = n
		c.h.armIdleLocked()
		c.h.mu.Unlock()
	case TypeReset:
		var m ResetMsg
		if err := DecodeControl(f, &m); err != nil {
			return err
		}
		return c.h.reset(m)
	case TypeEnd:
		c.h.mu.Lock()
		id := c.h.session
		c.h.mu.Unlock()
		c.h.finish(ExitMsg{Session: id, Code: -1, Cause: "ended by the gateway"})
	default:
		return fmt.Errorf("holder protocol: unknown frame type %q", f.Type)
	}
	return nil
}

// attach sends the replay and starts live output for this connection, in
// one critical section with the pump, so nothing is lost or doubled.
func (c *conn) attach(m AttachMsg) {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	rep := ReplayMsg{Session: h.session, Offset: h.ring.End()}
	var data []byte
	if m.Session != "" && m.Session == h.session {
		b, ok := h.ring.Since(m.Since)
		if ok {
			data = b
		}
		rep.Gap = !ok
	}
	if data == nil {
		data = h.ring.Bytes()
	}
	rep.Start = rep.Offset - int64(len(data))
	hdr, _ := ControlFrame(TypeReplay, rep)
	c.mu.Lock()
	c.attached = true
	c.mu.Unlock()
	c.send(hdr)
	// The replay goes as output frames numbered from where it starts, so
	// the gateway keeps byte offsets exact.
	start := rep.Start
	for len(data) > 0 {
		n := min(len(data), MaxPayload-8)
		frame, _ := OutputFrame(nil, start, data[:n])
		c.send(frame)
		data, start = data[n:], start+int64(n)
	}
}
