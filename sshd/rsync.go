package sshd

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// rsync -e ssh (CONTRACT.md "SSH: commands, files and forwarding", Files):
// the client runs `rsync --server ...` over its remote shell. When the
// backend serves rsync's remote side itself (remote.Rsync: the holder's,
// in every image, rsync or none), that line is a file transfer, not a
// command: decided as read-files (--sender: a download) or write-files (an
// upload), audited as a transfer, run without a shell as the session's
// login. Any other line (rsync --rsync-path=/usr/bin/rsync, say) is a
// command like any other, in the instance's own programs.

// rsyncer is the backend's rsync server, if it has one and line is an
// rsync client's remote command.
func (s *Server) rsyncer(line string) (remote.Rsync, bool) {
	r, ok := s.cfg.Remote.(remote.Rsync)
	return r, ok && isRsyncServer(line)
}

// rsync serves one rsync transfer and returns the exit status to send
// (rsync's own, or 1 when refused).
func (s *Server) rsync(sess *session, id keys.Identity, rs remote.Rsync, name string, inst sessions.Instance, lookupErr error) int {
	line := sess.cmd
	w := who(id, sess.remote)
	detail := []any{"protocol", "rsync", "argv", clip(line, 1024)}
	req, perr := parseRsyncLine(line)
	if perr == nil {
		detail = append(detail, "direction", map[bool]string{true: "download", false: "upload"}[req.sender],
			"path", clip(strings.Join(req.paths, " "), 1024))
	}
	// The one decision: a download reads the instance's files, an upload
	// (or a download that deletes what it sent) writes them.
	act := keys.WriteFiles
	if req.sender && !req.deletes {
		act = keys.ReadFiles
	}
	acc, ok := s.decide(sess, id, name, audit.Transfer, act, detail...)
	if !ok {
		sess.discardInput()
		return 1
	}
	login, ok := s.login(sess, id, acc, name, audit.Transfer, detail...)
	if !ok {
		sess.discardInput()
		return 1
	}
	w.Login = login
	fail := func(result, reason, msg string) int {
		sess.discardInput()
		sess.errorf(msg)
		s.cfg.Audit.Event(audit.Transfer, w, name, "", append(detail, "result", result, "reason", reason)...)
		return 1
	}
	if perr != nil {
		return fail("denied", "unsupported command line", "termgate: "+perr.Error())
	}
	ctx, cancel := context.WithCancel(sess.ctx)
	defer cancel()
	cut := &commandCut{srv: s, cancel: cancel}
	op, refused := s.beginRemote(sess.conn, opTransfer, name, cut.cut)
	if refused != "" {
		return fail("denied", "cap", refused)
	}
	defer op.end()
	if lookupErr != nil {
		return s.rsyncFailed(sess, w, name, detail, lookupErr)
	}
	p, err := rs.Rsync(ctx, inst, remote.RsyncOptions{
		Args: req.args, Login: login, Stderr: sess.ch.Stderr(),
		ReadOnly: acc.Decide(keys.WriteFiles) != nil,
	})
	if err == nil && !cut.started(p) {
		_ = p.Close()
		err = errors.New("revoked while starting")
	}
	if why := cut.reason(); why != "" {
		return s.rsyncCut(sess, w, name, detail, why)
	}
	if err != nil {
		return s.rsyncFailed(sess, w, name, detail, err)
	}
	sess.log.Debug("rsync started", "instance", name, "sender", req.sender)
	counted := &countedProcess{Process: p}
	code, _, finish := s.relayCommand(sess, counted, false)
	finish()
	op.end()
	if why := cut.reason(); why != "" {
		return s.rsyncCut(sess, w, name, detail, why)
	}
	// bytes is the wire's count in the transfer's direction (rsync sends
	// deltas: less than the files' size when the destination had them),
	// for termgate_transfer_bytes_total.
	in, out := counted.in.Load(), counted.out.Load()
	bytes := in
	if req.sender {
		bytes = out
	}
	result := append(detail, "bytes", bytes, "bytes_in", in, "bytes_out", out, "exit_code", code)
	switch {
	case code == exitDetached:
		result = append(result, "result", "cut", "reason", "client closed the channel")
	case code != 0:
		result = append(result, "result", "failed")
	default:
		result = append(result, "result", "ok")
	}
	s.cfg.Audit.Event(audit.Transfer, w, name, "", result...)
	return code
}

// rsyncFailed reports a lookup or start that failed.
func (s *Server) rsyncFailed(sess *session, w audit.Who, name string, detail []any, err error) int {
	sess.discardInput()
	var un *remote.Unavailable
	if errors.As(err, &un) {
		sess.errorf("termgate: " + un.Why)
	} else {
		sess.errorf(s.userError(sess, "rsync in", name, err))
	}
	s.cfg.Audit.Event(audit.Transfer, w, name, "", append(detail, "result", "failed", "reason", err.Error())...)
	return 1
}

// rsyncCut tells the user the transfer was cut (a revocation closes the
// connection, as for a command; the shutdown ends the channel).
func (s *Server) rsyncCut(sess *session, w audit.Who, name string, detail []any, why string) int {
	sess.discardInput()
	if why == whyShutdown {
		sess.errorf(endedNotice(why, "transfer"))
		s.cfg.Audit.Event(audit.Transfer, w, name, "", append(detail, "result", "cut", "reason", why)...)
		sess.end(1)
		return 1
	}
	sess.log.Info("rsync cut: access revoked", "instance", name, "cause", why)
	sess.errorf("termgate: " + why)
	s.cfg.Audit.Event(audit.Transfer, w, name, "", append(detail, "result", "revoked", "reason", why)...)
	sess.end(1)
	sess.closeConn()
	return 1
}

// countedProcess counts the bytes each way for the audit record: in is
// what the client sent (written to the process), out what it received.
type countedProcess struct {
	remote.Process
	in, out atomic.Int64
}

func (c *countedProcess) Read(p []byte) (int, error) {
	n, err := c.Process.Read(p)
	c.out.Add(int64(n))
	return n, err
}

func (c *countedProcess) Write(p []byte) (int, error) {
	n, err := c.Process.Write(p)
	c.in.Add(int64(n))
	return n, err
}
