package sshd

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/sftpwire"
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
	login, ok := s.login(sess, id, acc, name, audit.Transfer)
	if !ok {
		sess.discardInput()
		return 1
	}
	w.Login = login
	if s.cfg.Remote == nil {
		return refuse(noRemote, "no remote runner")
	}
	ctx, cancel := context.WithCancel(sess.ctx)
	defer cancel()
	var cutWhy atomic.Pointer[string]
	op, refused := s.beginRemote(sess.conn, opTransfer, name, func(why string) {
		cutWhy.Store(&why)
		cancel() // ends the server's stream (Remote.SFTP's ctx)
		if why != whyShutdown {
			_ = sess.ch.Close() // revoked: nothing more for this client
		} // else the relay tells the client first (sftpcut.go)
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
		conn, err = s.cfg.Remote.SFTP(ctx, inst, remote.SFTPOptions{ReadOnly: acc.Decide(keys.WriteFiles) != nil, Login: login})
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
	began := time.Now()
	files := newSFTPWatch(func(f sftpFile, complete bool) {
		s.cfg.Audit.Event(audit.Transfer, w, name, "", f.auditDetail(complete)...)
	})
	cut := func() string {
		if why := cutWhy.Load(); why != nil {
			return *why
		}
		return ""
	}
	up, down, why := s.relayTransfer(sess, conn, files, name, cut)
	files.end()
	if why != "" {
		if why == whyShutdown || why == whyInstanceGone {
			logCut(sess.log, "transfer", w, name, why, up, down, began)
		}
		s.cfg.Audit.Event(audit.Transfer, w, name, "", "result", "cut", "reason", why, "bytes_in", up, "bytes_out", down)
		return 1
	}
	s.cfg.Audit.Event(audit.Transfer, w, name, "", "result", "ok", "bytes_in", up, "bytes_out", down)
	return 0
}

// cutGrace bounds how long a cut transfer's client is answered (sftpcut.go)
// before its channel closes: sftp -b and scp give up at their first
// failure, an interactive sftp waits at its prompt.
const cutGrace = 5 * time.Second

// relayTransfer copies the channel's input (through its inbox) to conn
// and conn to the channel until conn's output ends (the server exited) or
// the channel is gone, then closes conn; files reads the packets each way.
// up and down count the bytes each way. why is what ended it under the
// client, if anything did: cut's reason (a revocation, the shutdown), or
// the instance's stop; the client was told (sftpcut.go). Every goroutine
// it starts is waited for.
func (s *Server) relayTransfer(sess *session, conn remote.Conn, files *sftpWatch, name string, cut func() string) (up, down int64, why string) {
	inflight := newSFTPInFlight()
	fails := &sftpFailures{w: sess.ch}
	clientDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	s.track.Go(func() {
		defer wg.Done()
		up = relayRequests(sess.in, conn, files, inflight, fails)
		close(clientDone)
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
	replies := &sftpwire.Scanner{Max: sftpMaxHead, On: func(p []byte) {
		files.reply(p)
		inflight.reply(p)
	}}
	down, between, clientGone := copyPackets(sess.ch, conn, replies)
	close(stop)
	_ = conn.Close()
	why = cut()
	if why == "" && !clientGone {
		select {
		case <-clientDone: // the client ended it; the server followed
		case <-sess.closed:
		default: // the server ended under the client
			if s.instanceGone(sess.ctx, name) {
				why = whyInstanceGone
			}
		}
	}
	if why == whyShutdown || why == whyInstanceGone {
		msg := endedNotice(why, "transfer")
		sess.errorf(msg)
		fails.msg = "termgate: " + why + "; transfer ended"
		if between {
			if ids, ok := inflight.takeOver(); ok && fails.answer(ids...) == nil {
				t := time.NewTimer(cutGrace)
				select { // until the client gives up
				case <-clientDone:
				case <-sess.closed:
				case <-t.C:
				}
				t.Stop()
			}
		}
	}
	sess.in.setDiscard() // unblocks the upload's read
	wg.Wait()
	return up, down, why
}

// relayRequests copies the client's requests from in to conn until the
// client's EOF or the channel's end, and returns the bytes copied. Once
// conn fails it goes on reading, for the requests to be answered
// (sftpcut.go) or dropped.
func relayRequests(in io.Reader, conn io.Writer, files *sftpWatch, inflight *sftpInFlight, fails *sftpFailures) (up int64) {
	var answer []uint32
	requests := &sftpwire.Scanner{Max: sftpMaxHead, On: func(p []byte) {
		files.request(p)
		if id, ok := inflight.request(p); ok {
			answer = append(answer, id)
		}
	}}
	buf := make([]byte, 32<<10)
	live := true
	for {
		n, err := in.Read(buf)
		_, _ = requests.Write(buf[:n])
		if len(answer) > 0 { // the server is gone: nothing more goes to it
			_ = fails.answer(answer...)
			answer, live = answer[:0], false
		}
		if live && n > 0 {
			k, werr := conn.Write(buf[:n])
			up += int64(k)
			live = werr == nil
		}
		if err != nil {
			return up
		}
	}
}
