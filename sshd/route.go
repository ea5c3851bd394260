package sshd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// route is the innermost handler: it parses the command line and runs it.
// It runs after authenticate, so the identity is in the context.
func (s *Server) route(sess *session) {
	id, ok := sess.identity()
	if !ok { // a chain without authenticate: fail closed
		sess.log.Error("no identity in the session context")
		sess.errorf("permission denied")
		sess.end(1)
		return
	}
	if sess.subsys != "" {
		sess.end(s.subsystem(sess, id))
		return
	}
	if why := sess.raw.problem(); why != "" { // app@web1, web1+Bad
		sess.discardInput()
		sess.log.Debug("unusable user name", "user", clip(sess.raw.raw, 200))
		sess.errorf(why)
		sess.end(1)
		return
	}
	if inst, ok, err := s.instanceCommand(sess, id); ok { // ssh INSTANCE@HOST CMD...
		if rs, ok := s.rsyncer(sess.cmd); ok { // rsync -e ssh: a transfer (rsync.go)
			sess.end(s.rsync(sess, id, rs, sess.user, inst, err))
			return
		}
		sess.end(s.runCommand(sess, id, sess.user, inst, err))
		return
	}
	cmd, err := parseCommand(sess.cmd)
	if err != nil || cmd.verb != verbAttach {
		sess.discardInput() // commands read no input; do not hold it
	}
	if err != nil {
		sess.log.Debug("usage error", "err", err)
		sess.end(s.answerUsageError(sess, err))
		return
	}
	switch cmd.verb {
	case verbAttach:
		sess.end(s.attach(sess, id, sess.raw.addr()))
	case verbReset:
		name := cmd.instance
		if name == "" {
			name = sess.raw.addr()
		}
		sess.end(s.reset(sess, id, name))
	case verbList:
		sess.end(s.list(sess, id))
	case verbInstances:
		sess.end(s.instances(sess, id))
	case verbSize:
		sess.end(s.size(sess, id, cmd.instance, cmd.size))
	case verbKeep:
		sess.end(s.keep(sess, id, cmd.instance, cmd.size))
	case verbWho:
		sess.end(s.who(sess, id, cmd.instance))
	case verbHand:
		sess.end(s.hand(sess, id, cmd.instance))
	case verbGrant:
		sess.end(s.grant(sess, id, cmd.instance, cmd.size))
	case verbLog:
		sess.end(s.awayLog(sess, id, cmd.instance))
	case verbWhoami:
		sess.end(s.whoami(sess, id))
	case verbLogout:
		sess.end(s.logout(sess, id))
	case verbKeys:
		sess.end(s.listKeys(sess, id))
	case verbKeysForget:
		sess.end(s.forgetKey(sess, id, cmd.instance))
	case verbHelp:
		_, _ = io.WriteString(sess, usage)
		sess.end(0)
	}
}

// decide is the one access decision for an SSH request on the instance
// name (keys.Identity.On, then Decide(act)), before any registry call;
// name may be a session's address INSTANCE+NAME (the decision is the
// instance's: a named session is decided as its instance). A
// refusal is written to the client, logged and audited as auditAction
// with result "denied" (and extra); an instance the credential may not
// use gets the not-found message, so it learns nothing about which
// instances exist.
func (s *Server) decide(sess *session, id keys.Identity, name, auditAction string, act keys.Action, extra ...any) (keys.Access, bool) {
	w := who(id, sess.remote)
	addr, err := sessions.ParseAddr(name)
	if err != nil {
		reason := "invalid instance name"
		if errors.Is(err, sessions.ErrBadSessionName) {
			reason = "invalid session name"
		}
		sess.errorf(err.Error())
		s.cfg.Audit.Event(auditAction, w, clip(name, 128), "", append(extra, "result", "denied", "reason", reason)...)
		return keys.Access{}, false
	}
	a := id.On(addr.Instance, s.cfg.Switches)
	r := a.Decide(act)
	if r == nil {
		return a, true
	}
	s.refused(sess, w, addr.Instance, auditAction, r, append(nameAttr(addr.Name), extra...)...)
	return a, false
}

// login is the decision's login column for the user name's LOGIN@
// (keys.Access.DecideLogin): the login the request runs as ("" the
// instance's default user), or false once the client, the log and the
// audit trail were told why not.
func (s *Server) login(sess *session, id keys.Identity, acc keys.Access, name, auditAction string, extra ...any) (string, bool) {
	login, r := acc.DecideLogin(sess.raw.login)
	if r == nil {
		return login, true
	}
	w := who(id, sess.remote)
	w.Login = clip(sess.raw.login, 64)
	inst, detail := sessions.AuditAddr(name, extra...)
	s.refused(sess, w, inst, auditAction, r, detail...)
	return "", false
}

// refused tells the client, the log and the audit trail about a refusal
// of the decision.
func (s *Server) refused(sess *session, w audit.Who, name, auditAction string, r *keys.Refusal, extra ...any) {
	msg := r.Message
	switch {
	case r.Hidden:
		msg = notFound(name, auditAction)
	case r.Action == keys.Command || r.Action == keys.ReadFiles || r.Action == keys.WriteFiles:
		msg = "termgate: " + msg // these answer a command line run in the instance
	}
	sess.log.Warn("refused", "action", r.Action.String(), "instance", name, "reason", r.Reason)
	sess.errorf(msg)
	s.cfg.Audit.Event(auditAction, w, name, "", append(extra, "result", "denied", "reason", r.Reason)...)
}

// reset kills the instance's shell and starts a fresh one.
func (s *Server) reset(sess *session, id keys.Identity, name string) int {
	acc, ok := s.decide(sess, id, name, audit.Reset, keys.Reset)
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	defer cancel()
	ns, err := s.cfg.Registry.ResetAs(ctx, name, resetBy(id), acc.Login())
	if err != nil {
		sess.errorf(s.userError(sess, "reset", name, err))
		inst, detail := sessions.AuditAddr(name, "result", "failed", "reason", err.Error())
		s.cfg.Audit.Event(audit.Reset, who(id, sess.remote), inst, "", detail...)
		return 1
	}
	sess.log.Debug("session reset", "instance", name, "session", ns.ID()) // the registry logs the info line, with who
	inst, detail := sessions.AuditAddr(name, "result", "ok")
	s.cfg.Audit.Event(audit.Reset, who(id, sess.remote), inst, ns.ID(), detail...)
	_, _ = fmt.Fprintf(sess, "reset %s: new session %s\n", name, ns.ID())
	return 0
}

// resetBy is how a reset is credited in the notice other clients see.
func resetBy(id keys.Identity) string { return id.Name + " (ssh)" }

// list prints the sessions of the instances this key may use.
func (s *Server) list(sess *session, id keys.Identity) int {
	var rows []sessions.Info
	for _, in := range s.cfg.Registry.Sessions() {
		if id.May(in.Instance) {
			rows = append(rows, in)
		}
	}
	if len(rows) == 0 {
		_, _ = io.WriteString(sess, "no sessions\n")
		return 0
	}
	// The RECORDING column (the file relative to --record-dir) only when
	// something is recorded: without recordings the table stays as it was.
	// Likewise DURABLE (yes: the shell outlives the gateway) only when a
	// session is durable.
	// REAPED (when an idle session is reaped, relative) only when one is
	// idle.
	// NAME (the session's name; "-" for the default one) only when an
	// instance has a named session; LOGIN (the instance user its shell
	// runs as; "-" the default user) only when a session has a login.
	recorded, durable, idle, named, logins := false, false, false, false, false
	for _, in := range rows {
		named = named || in.Name != ""
		logins = logins || in.Login != ""
		recorded = recorded || in.Recording != ""
		durable = durable || in.Durable
		idle = idle || in.ReapAt != nil
	}
	tw := tabwriter.NewWriter(sess, 0, 0, 2, ' ', 0)
	header := "INSTANCE\tSESSION\tCLIENTS\tIDLE SINCE\tBYTES"
	if named {
		header = "INSTANCE\tNAME\tSESSION\tCLIENTS\tIDLE SINCE\tBYTES"
	}
	if logins {
		header += "\tLOGIN"
	}
	if idle {
		header += "\tREAPED"
	}
	if durable {
		header += "\tDURABLE"
	}
	if recorded {
		header += "\tRECORDING"
	}
	_, _ = fmt.Fprintln(tw, header)
	attached := false
	for _, in := range rows {
		idleSince := "-"
		if in.IdleSince != nil {
			idleSince = in.IdleSince.UTC().Format(time.RFC3339)
		}
		_, _ = fmt.Fprintf(tw, "%s\t", in.Instance)
		if named {
			_, _ = fmt.Fprintf(tw, "%s\t", listCell(in.Name))
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%d", in.Session, in.Clients, idleSince, in.BytesOut)
		if logins {
			_, _ = fmt.Fprintf(tw, "\t%s", listCell(in.Login)) // "-": the default user
		}
		if idle {
			_, _ = fmt.Fprintf(tw, "\t%s", reapCell(in, time.Now()))
		}
		if durable {
			_, _ = fmt.Fprintf(tw, "\t%s", map[bool]string{true: "yes", false: "no"}[in.Durable])
		}
		if recorded {
			_, _ = fmt.Fprintf(tw, "\t%s", listCell(in.Recording))
		}
		_, _ = fmt.Fprintln(tw)
		attached = attached || len(in.Attached) > 0
	}
	_ = tw.Flush()
	if attached {
		listAttached(sess, rows)
	}
	return 0
}

// listAttached prints who is attached to each session, as a second table
// (one row per client, so it stays readable with many observers and each
// line can be grepped).
func listAttached(w io.Writer, rows []sessions.Info) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "\nINSTANCE\tWHO\tVIA\tREMOTE\tSINCE\tACCESS")
	for _, in := range rows {
		for _, a := range in.Attached {
			access := "read-write"
			if a.ReadOnly {
				access = "read-only"
			}
			addr := sessions.Addr{Instance: in.Instance, Name: in.Name}.String()
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", addr, listCell(a.Who), a.Via, listCell(a.Remote), a.Since.UTC().Format(time.RFC3339), access)
		}
	}
	_ = tw.Flush()
}

// listCell keeps a table cell on its line and in its column: names are
// already printable (keys sanitises them), but may hold a tab; an empty
// cell is "-".
func listCell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// userError turns a registry error into the message the user reads; the
// detail of unexpected errors goes to the log only.
func (s *Server) userError(sess *session, what, name string, err error) string {
	var tooLong *sessions.KeepTooLongError
	var tooMany *sessions.TooManySessionsError
	var badLogin *sessions.LoginError
	var wrongLogin *sessions.WrongLoginError
	var noShell *sessions.NoShellError
	switch {
	case errors.As(err, &badLogin), errors.As(err, &wrongLogin):
		return err.Error() // says which login to use
	case errors.As(err, &noShell):
		return noShell.Error() // says what the instance lacks

	case errors.Is(err, sessions.ErrNotFound):
		inst, _, _ := strings.Cut(name, "+")
		return sessions.NotFoundMessage(inst)
	case errors.Is(err, sessions.ErrNothingToWatch):
		return sessions.NothingToWatchMessage(name)
	case errors.Is(err, sessions.ErrNoSession):
		return sessions.NoSessionMessage(name)
	case errors.As(err, &tooLong):
		return err.Error()
	case errors.Is(err, sessions.ErrPaused):
		return sessions.PausedMessage(name)
	case errors.Is(err, sessions.ErrBadName), errors.Is(err, sessions.ErrBadSessionName):
		return err.Error()
	case errors.As(err, &tooMany):
		return err.Error()
	case errors.Is(err, sessions.ErrClosed):
		return "the gateway is shutting down"
	case errors.Is(err, sessions.ErrPreviousShellAlive):
		return err.Error() // says what is going on and to try again shortly
	case errors.Is(err, context.DeadlineExceeded):
		sess.log.Warn(what+" timed out", "instance", name, "err", err)
		return fmt.Sprintf("%s %s timed out; try again", what, name)
	}
	// The action is an attribute: "run a command in" read as a message
	// left a hole before the instance.
	sess.log.Error("ssh request failed", "action", what, "instance", name, "err", err)
	if s.backendDown(sess.ctx) {
		return fmt.Sprintf("%s %s failed: %s", what, name, backendUnreachable)
	}
	return fmt.Sprintf("%s %s failed; the gateway log has the details", what, name)
}

// answerUsageError answers a command line that is no gateway command and
// returns the exit status. A word close to a command gets "did you mean"
// and the short usage (status 2); any other word, under a user name that
// could name an instance, was a command meant for that instance, which is
// not there: the not-found message, status 1, as an attach gets (ssh
// web1@HOST uptime with web1 stopped). Otherwise the usage, status 2.
func (s *Server) answerUsageError(sess *session, err error) int {
	var ue *usageError
	if errors.As(err, &ue) && ue.unknown != "" {
		if v := closestVerb(ue.unknown); v != "" {
			sess.errorf("termgate: " + err.Error() + "; did you mean " + v + "?\n" + shortUsage)
			return 2
		}
		if msg := s.notAnInstance(sess.user); msg != "" {
			sess.errorf("termgate: " + msg)
			return 1
		}
	}
	msg := "termgate: " + err.Error()
	if hint := s.notAnInstance(sess.user); hint != "" {
		msg += "; " + hint
	}
	sess.errorf(msg + "\n\n" + usage)
	return 2
}

// notAnInstance is the hint an unknown gateway command gets when the user
// name could have named an instance (ssh web1@HOST uptime with web1
// stopped, or out of the key's instances=): commands run in an instance
// only when it is one this key may reach. The same words for both, so
// the key learns nothing about which instances exist.
func (s *Server) notAnInstance(user string) string {
	if user == gatewayUser || sessions.CheckName(user) != nil {
		return ""
	}
	return sessions.NotFoundMessage(user) + " (commands run in an instance only when the user name is one this key may reach; " +
		"the instances: ssh termgate@HOST instances; the gateway's commands: ssh termgate@HOST help)"
}

// notFound is the not-found message; an attach adds how to find the
// instances (the SSH user names the instance: ssh HOST alone tries the
// local login name).
func notFound(name, action string) string {
	msg := sessions.NotFoundMessage(name)
	if action == audit.Attach {
		msg += "\n" + attachHint
	}
	return msg
}

// attachHint follows the not-found message of an attach.
const attachHint = "the SSH user names the instance (ssh -t INSTANCE@HOST); the instances this key may reach: ssh termgate@HOST instances"
