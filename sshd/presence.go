package sshd

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// who lists who is attached to an instance's session (ssh HOST who
// INSTANCE): via what, their access, since when, when they last typed.
func (s *Server) who(sess *session, id keys.Identity, name string) int {
	if _, ok := s.decide(sess, id, name, audit.WhoIs, keys.Watch); !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	defer cancel()
	list, err := s.cfg.Registry.Who(ctx, name)
	if err != nil {
		return s.presenceFailed(sess, "who", name, err)
	}
	if len(list) == 0 {
		_, _ = fmt.Fprintf(sess, "nobody is attached to %s\n", name)
		return 0
	}
	if login := s.sessionLogin(name); login != "" {
		_, _ = fmt.Fprintf(sess, "%s runs as %s\n", name, login)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(sess, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "WHO\tVIA\tACCESS\tSINCE\tLAST TYPED\tREMOTE")
	for _, a := range list {
		acc := "read-write"
		switch {
		case a.Granted:
			acc = "granted"
		case a.Hand:
			acc = "read-only, hand raised"
		case a.ReadOnly:
			acc = "read-only"
		}
		typed := "never"
		if a.LastInput != nil {
			typed = humanLeft(now.Sub(*a.LastInput)) + " ago"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", listCell(a.Who), a.Via, acc, a.Since.UTC().Format(time.RFC3339), typed, listCell(a.Remote))
	}
	_ = tw.Flush()
	return 0
}

// hand raises the hand of this key's observer clients on the instance
// (ssh HOST hand INSTANCE): the writers are asked to let them type.
func (s *Server) hand(sess *session, id keys.Identity, name string) int {
	if _, ok := s.decide(sess, id, name, audit.Hand, keys.Watch); !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	defer cancel()
	if _, err := s.cfg.Registry.RaiseHand(ctx, name, id.Name); err != nil {
		return s.presenceFailed(sess, "hand", name, err)
	}
	_, _ = fmt.Fprintf(sess, "hand raised on %s: the writers are asked to let %s type\n", name, id.Name)
	return 0
}

// grant gives the observers named who write access to the instance's
// session until it is reset (ssh HOST grant INSTANCE WHO). Read-only keys
// may not.
func (s *Server) grant(sess *session, id keys.Identity, name, whom string) int {
	if _, ok := s.decide(sess, id, name, audit.Grant, keys.GrantWrite, "to", whom); !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	defer cancel()
	n, err := s.cfg.Registry.Grant(ctx, name, whom, id.Name+" (ssh)")
	if err != nil {
		return s.presenceFailed(sess, "grant", name, err)
	}
	inst, detail := sessions.AuditAddr(name, "to", whom, "clients", n, "result", "ok")
	s.cfg.Audit.Event(audit.Grant, who(id, sess.remote), inst, "", detail...)
	_, _ = fmt.Fprintf(sess, "granted %s write access to %s until the session is reset (%d %s)\n", whom, name, n, plural(n, "client"))
	return 0
}

func (s *Server) presenceFailed(sess *session, what, name string, err error) int {
	var none *sessions.NoObserverError
	switch {
	case errors.As(err, &none):
		sess.errorf(err.Error() + "; attach first (ssh -t " + name + "@HOST)")
	default:
		sess.errorf(s.userError(sess, what, name, err))
	}
	return 1
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// sessionLogin is the login the session at addr runs as ("" the
// instance's default user, or no such session).
func (s *Server) sessionLogin(addr string) string {
	a, err := sessions.ParseAddr(addr)
	if err != nil {
		return ""
	}
	for _, in := range s.cfg.Registry.Sessions() {
		if in.Instance == a.Instance && in.Name == a.Name {
			return in.Login
		}
	}
	return ""
}
