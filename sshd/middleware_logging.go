package sshd

import (
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// logging logs the session's start and end, with the user, key, command
// and outcome, at debug: an attach and its detach have their own info
// lines (attach.go) and a command its audit record, so at info a session
// costs no line of its own.
func logging(next handler) handler {
	return func(sess *session) {
		fp := ""
		if sess.key != nil {
			fp = gossh.FingerprintSHA256(sess.key)
		}
		detail := []any{"user", sess.raw.raw, "key", fp, "command", clip(sess.cmd, 200), "pty", sess.pty != nil}
		if sess.conn != nil { // nil in unit tests
			detail = append(detail, "conn", sess.conn.id)
		}
		if sess.remote != nil {
			detail = append(detail, "remote", sess.remote.String())
		}
		start := time.Now()
		sess.log.Debug("session opened", detail...)
		next(sess)
		code, ended := sess.exitStatus()
		outcome := "exit"
		switch {
		case !ended:
			outcome = "returned"
		case code == exitDetached:
			outcome = "detached"
		}
		// sess.log now says who (authenticate), the detail the rest.
		sess.log.Debug("session closed", append(detail, "outcome", outcome, "status", code,
			"duration", time.Since(start).Round(time.Millisecond))...)
	}
}

// clip shortens s to at most n bytes for the log.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
