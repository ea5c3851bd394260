package sshd

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
)

// subsystemRequest starts the sftp subsystem (RFC 4254 6.5), once per
// channel, like a command: who may is the handler's to say, on stderr, so
// the client prints why. Other subsystems are refused.
func (s *Server) subsystemRequest(sess *session, req *gossh.Request) (bool, func()) {
	var m struct{ Name string }
	if sess.started || gossh.Unmarshal(req.Payload, &m) != nil {
		return false, nil
	}
	if m.Name != "sftp" {
		sess.log.Debug("refused a subsystem", "subsystem", clip(m.Name, 64))
		return false, nil
	}
	if !sess.in.start() {
		return false, nil
	}
	sess.started, sess.subsys = true, m.Name
	return true, func() { s.track.Go(func() { s.serveSession(sess) }) }
}

// noRemote refuses a file transfer on a backend that has none.
const noRemote = "termgate: this gateway's backend cannot transfer files"

// subsystem serves the sftp subsystem: the instance named by the login
// user name, an SFTP server in it (Remote.SFTP), the channel and the
// server's stream copied both ways until the server ends or the channel
// closes. Audit: a record per file opened (path, direction, bytes:
// sftpaudit.go) and one for the transfer (bytes each way, result). Its
// exit status: 0 when the server ended, 1 when refused or cut.
func (s *Server) subsystem(sess *session, id keys.Identity) int {
	name := sess.user
	w := who(id, sess.remote)
	refuse := func(msg, reason string) int {
		sess.discardInput()
		sess.errorf(msg)
		s.cfg.Audit.Event(audit.Transfer, w, name, "", "result", "denied", "reason", reason)
		return 1
	}
	acc, ok := s.decide(sess, id, name, audit.Transfer, keys.ReadFiles)
	if !ok {
		sess.discardInput()
		return 1
	}
	if s.cfg.Remote == nil {
		return refuse(noRemote, "no remote runner")
	}
	ctx, cancel := context.WithCancel(sess.ctx)
	defer cancel()
	var cutWhy atomic.Pointer[string]
	op, refused := s.beginRemote(sess.conn, opTransfer, name, func(why string) {
		cutWhy.Store(&why)
		cancel() // ends the server's stream (Remote.SFTP's ctx)
		_ = sess.ch.Close()
	})
	if refused != "" {
		return refuse(refused, "cap")
	}
	defer op.end()
	lctx, lcancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	inst, err := s.cfg.Registry.Lookup(lctx, name)
	var conn remote.Conn
	if err == nil {
		// A download-only credential gets a server that refuses every
		// write (files="download"); ctx bounds the stream's life, not
		// only its start.
		conn, err = s.cfg.Remote.SFTP(ctx, inst, remote.SFTPOptions{ReadOnly: acc.Decide(keys.WriteFiles) != nil})
	}
	lcancel()
	if err != nil {
		sess.discardInput()
		msg := ""
		if u := (*remote.Unavailable)(nil); errors.As(err, &u) {
			msg = "termgate: " + u.Why
		} else {
			msg = s.userError(sess, "file transfer in", name, err)
		}
		sess.errorf(msg)
		s.cfg.Audit.Event(audit.Transfer, w, name, "", "result", "failed", "reason", err.Error())
		return 1
	}
	sess.log.Debug("file transfer started", "instance", name)
	files := newSFTPWatch(func(f sftpFile, complete bool) {
		s.cfg.Audit.Event(audit.Transfer, w, name, "", f.auditDetail(complete)...)
	})
	up, down := s.relayTransfer(sess, conn, files)
	files.end()
	result, code := "ok", 0
	if why := cutWhy.Load(); why != nil {
		result, code = "cut", 1
		s.cfg.Audit.Event(audit.Transfer, w, name, "", "result", result, "reason", *why, "bytes_in", up, "bytes_out", down)
		return code
	}
	s.cfg.Audit.Event(audit.Transfer, w, name, "", "result", result, "bytes_in", up, "bytes_out", down)
	return code
}

// relayTransfer copies the channel's input (through its inbox) to conn
// and conn to the channel until conn's output ends (the server exited) or
// the channel is gone, then closes conn; files reads the packets each way.
// up and down count the bytes each way. Both goroutines are waited for.
func (s *Server) relayTransfer(sess *session, conn remote.Conn, files *sftpWatch) (up, down int64) {
	var wg sync.WaitGroup
	wg.Add(1)
	s.track.Go(func() {
		defer wg.Done()
		up, _ = io.Copy(conn, io.TeeReader(sess.in, files.client())) // until the client's EOF or the channel's end
		_ = conn.CloseWrite()
	})
	stop := make(chan struct{})
	wg.Add(1)
	s.track.Go(func() { // the channel gone: nothing more to copy either way
		defer wg.Done()
		select {
		case <-sess.closed:
			_ = conn.Close()
		case <-stop:
		}
	})
	down, _ = io.Copy(sess.ch, io.TeeReader(conn, files.server()))
	close(stop)
	_ = conn.Close()
	sess.in.setDiscard() // unblocks the upload's read
	wg.Wait()
	return up, down
}
