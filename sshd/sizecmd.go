package sshd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// size shows or pins an instance's window size (ssh HOST size INSTANCE
// [COLSxROWS|auto]). Showing needs what list needs; pinning is refused to
// read-only keys, as reset is.
func (s *Server) size(sess *session, id keys.Identity, name, arg string) int {
	acc, ok := s.decide(sess, id, name, audit.Size, keys.Watch)
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	defer cancel()
	var info sessions.SizeInfo
	var err error
	if arg == "" {
		info, err = s.cfg.Registry.Size(ctx, name)
	} else {
		want, perr := parseSizeArg(arg)
		if perr != nil {
			sess.errorf("termgate: " + perr.Error())
			return 2
		}
		if r := acc.Decide(keys.Pin); r != nil {
			s.refused(sess, who(id, sess.remote), name, audit.Size, r, "size", arg)
			return 1
		}
		info, err = s.cfg.Registry.PinSize(ctx, name, want)
		if err == nil {
			inst, detail := sessions.AuditAddr(name, "size", arg, "result", "ok")
			s.cfg.Audit.Event(audit.Size, who(id, sess.remote), inst, "", detail...)
		}
	}
	if err != nil {
		sess.errorf(s.userError(sess, "size", name, err))
		return 1
	}
	how := "follows the clients (" + info.Policy.String() + ")"
	if info.Pinned {
		how = "pinned (ssh HOST size " + name + " auto to follow the clients again)"
	}
	_, _ = fmt.Fprintf(sess, "size %s: %s, %s\n", name, info.Size, how)
	return 0
}

// parseSizeArg reads COLSxROWS or auto (a zero Size).
func parseSizeArg(arg string) (sessions.Size, error) {
	if arg == "auto" {
		return sessions.Size{}, nil
	}
	c, r, ok := strings.Cut(strings.ToLower(arg), "x")
	cols, err1 := strconv.Atoi(c)
	rows, err2 := strconv.Atoi(r)
	size := sessions.Size{Cols: cols, Rows: rows}
	if !ok || err1 != nil || err2 != nil || !size.Valid() {
		return sessions.Size{}, fmt.Errorf("size %q: use COLSxROWS with 1..%d each (e.g. 120x40), or auto", clip(arg, 32), sessions.MaxDim)
	}
	return size, nil
}
