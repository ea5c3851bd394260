package sshd

import (
	"context"
	"fmt"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// keep keeps an instance's session from idle reaping for a while (ssh
// HOST keep INSTANCE 8h|off). Read-only keys may not: a keep holds the
// instance's processes running.
func (s *Server) keep(sess *session, id keys.Identity, name, arg string) int {
	if _, ok := s.decide(sess, id, name, audit.Keep, keys.Keep, "keep", clip(arg, 32)); !ok {
		return 1
	}
	d, err := parseKeep(arg)
	if err != nil {
		sess.errorf("termgate: " + err.Error())
		return 2
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	defer cancel()
	until, err := s.cfg.Registry.Keep(ctx, name, d)
	if err != nil {
		sess.errorf(s.userError(sess, "keep", name, err))
		return 1
	}
	inst, detail := sessions.AuditAddr(name, "keep", d.String(), "result", "ok")
	s.cfg.Audit.Event(audit.Keep, who(id, sess.remote), inst, "", detail...)
	if until.IsZero() {
		_, _ = fmt.Fprintf(sess, "keep %s: off; reaped after the idle timeout with no client attached\n", name)
		return 0
	}
	_, _ = fmt.Fprintf(sess, "keep %s: kept until %s (in %s) with no client attached\n", name, until.UTC().Format(time.RFC3339), humanLeft(d))
	return 0
}

// parseKeep reads a keep's duration: Go syntax (8h, 90m), or off.
func parseKeep(arg string) (time.Duration, error) {
	if arg == "off" {
		return 0, nil
	}
	d, err := time.ParseDuration(arg)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("keep %q: use a duration such as 8h or 90m, or off", clip(arg, 32))
	}
	return d, nil
}

// reapCell is list's REAPED cell: when an idle session is reaped, from
// now ("in 28m", "in 7h59m (kept)"); "-" while a client is attached.
func reapCell(in sessions.Info, now time.Time) string {
	if in.ReapAt == nil {
		return "-"
	}
	left := in.ReapAt.Sub(now)
	if left < 0 {
		left = 0
	}
	cell := "in " + humanLeft(left)
	if in.KeepUntil != nil && !in.KeepUntil.Before(*in.ReapAt) {
		cell += " (kept)"
	}
	return cell
}

// humanLeft writes a time left as a person reads it: 45s, 28m, 7h59m.
func humanLeft(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute)/time.Minute))
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}
