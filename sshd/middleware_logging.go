package sshd

import (
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// logging gives the session a logger with the user, key and command, and
// logs the session's end with its outcome and duration. A session's end is
// expected, whatever its status: Info.
func logging(next handler) handler {
	return func(sess *session) {
		fp := ""
		if sess.key != nil {
			fp = gossh.FingerprintSHA256(sess.key)
		}
		sess.log = sess.log.With("user", sess.user, "key", fp, "command", clip(sess.cmd, 200), "pty", sess.pty != nil)
		start := time.Now()
		sess.log.Debug("session opened")
		next(sess)
		code, ended := sess.exitStatus()
		outcome := "exit"
		switch {
		case !ended:
			outcome = "returned"
		case code == exitDetached:
			outcome = "detached"
		}
		sess.log.Info("session closed", "outcome", outcome, "status", code,
			"duration", time.Since(start).Round(time.Millisecond))
	}
}

// clip shortens s to at most n bytes for the log.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
