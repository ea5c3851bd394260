package sshd

import (
	"context"
	"errors"
	"fmt"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// awayLog prints what INSTANCE's shell printed since this key's person
// last detached from it (ssh HOST log INSTANCE), raw on stdout, as far as
// the replay buffer still reaches, without terminal queries (the client's
// terminal would answer them into nothing, or worse). The summary and a
// note when the buffer no longer reaches back go to stderr, so stdout
// can be piped or saved. Read-only keys may run it: it shows what they
// could watch. instances= limits apply as for attach.
func (s *Server) awayLog(sess *session, id keys.Identity, name string) int {
	if _, ok := s.decide(sess, id, name, audit.OutputLog, keys.Watch); !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	l, err := s.cfg.Registry.Since(ctx, name, id.Name)
	cancel()
	switch {
	case errors.Is(err, sessions.ErrNeverLeft):
		sess.errorf(sessions.NeverLeftMessage(name))
		return 1
	case err != nil:
		sess.errorf(s.userError(sess, "log", name, err))
		return 1
	}
	inst, detail := sessions.AuditAddr(name, "result", "ok", "bytes", len(l.Output))
	s.cfg.Audit.Event(audit.OutputLog, who(id, sess.remote), inst, "", detail...)
	sess.errorf(fmt.Sprintf("termgate: %s since you left at %s (%s ago): %s", name, l.Left.UTC().Format("15:04:05 UTC"), sessions.AwayDuration(l.Away.Gone), l.Away.Summary()))
	if l.Missing > 0 {
		sess.errorf(fmt.Sprintf("termgate: the buffer no longer reaches back that far: the first %d bytes are gone; what follows starts at a line", l.Missing))
	}
	// The channel, not sess: sess.Write would turn "\n" into "\r\n".
	if _, err := sess.ch.Write(l.Output); err != nil {
		return exitDetached
	}
	return 0
}
