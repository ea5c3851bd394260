package sshd

import (
	"time"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// logging gives the session a logger with the user, key and command, and
// logs the session's end with its outcome and duration. A session's end is
// expected, whatever its status: Info.
func logging(next ssh.Handler) ssh.Handler {
	return func(s ssh.Session) {
		sess := sessOf(s)
		fp := ""
		if k := s.PublicKey(); k != nil {
			fp = gossh.FingerprintSHA256(k)
		}
		_, _, pty := s.Pty()
		sess.log = sess.log.With("user", s.User(), "key", fp, "command", clip(s.RawCommand(), 200), "pty", pty)
		start := time.Now()
		sess.log.Debug("session opened")
		next(s)
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
