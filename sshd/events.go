package sshd

import "github.com/termgate/termgate/sessions"

// relayEvents shows a client's in-band events (sessions.Event) over SSH,
// most as one [termgate] line between the output before and after them.
// Only the relay's output goroutine uses it.
type relayEvents struct {
	r *relay
	// skipped is a skip whose notice follows the redraw (skip.go).
	skipped *sessions.Skipped
}

var _ sessions.EventHandler = (*relayEvents)(nil)

// Reset: sessions moved the client to the fresh shell (a revoked one is
// closed instead): only the notice is left to write.
func (e *relayEvents) Reset(reset *sessions.ResetError) error { return e.r.resetNotice(reset) }

// Notice: the instance paused or runs again; the client stays.
func (e *relayEvents) Notice(n *sessions.Notice) error { return e.line(n) }

// Skipped: the client was brought forward; the redraw comes next, then
// its notice (writeOutput).
func (e *relayEvents) Skipped(s *sessions.Skipped) error {
	e.skipped = s
	return nil
}

// Away: back after a detach; the summary comes after the redraw.
func (e *relayEvents) Away(a *sessions.Away) error { return e.line(a) }

// Resized: another client's size, a pin or a fall-back. A remote terminal
// cannot be resized from here; the shell redraws.
func (e *relayEvents) Resized(*sessions.Resized) error { return nil }

// HandRaised: an observer asks to type; the line says how to let them.
func (e *relayEvents) HandRaised(h *sessions.HandRaised) error {
	return e.r.notice(e.r.out, h.String()+"; let them: ssh HOST grant "+e.r.name+" "+h.Who.Who)
}

// Granted: this observer may type now.
func (e *relayEvents) Granted(g *sessions.Granted) error { return e.line(g) }

// Presence: a join or a leave (--notify-joins).
func (e *relayEvents) Presence(p *sessions.Presence) error { return e.line(p) }

func (e *relayEvents) line(ev sessions.Event) error { return e.r.notice(e.r.out, ev.String()) }
