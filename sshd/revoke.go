package sshd

import (
	"errors"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/sessions"
)

// What a revoked client reads (after "access revoked: "); the detail goes
// to the log only.
var (
	errKeyRevoked      = errors.New("this key is no longer authorized")
	errInstanceRevoked = errors.New("this key may no longer use this instance")
)

// stillAllowed is the sessions.AttachOptions.Allowed of an SSH client: the
// key it authenticated with must still be authorized (present in
// authorized_keys with a matching from=; for a certificate, its CA still
// trusted, neither revoked, still valid) and its instance patterns must
// still match the instance's current name. The registry asks it on every
// attach, so also before moving the client into a fresh shell after a
// reset, on Recheck after every reload of the credentials, and when the
// client's certificate expires (certexpiry.go).
func (s *Server) stillAllowed(sess *session, key gossh.PublicKey) func(instance string) error {
	remote := sess.remote
	return func(instance string) error {
		id, err := s.authorize(key, remote)
		if at, ok := certExpiry(key); err != nil && ok && !time.Now().Before(at) {
			sess.log.Info("access revoked: the certificate expired", "instance", instance, "err", err)
			return errCertExpired
		}
		if err != nil {
			sess.log.Info("access revoked: the key is no longer authorized", "instance", instance, "err", err)
			return errKeyRevoked
		}
		if !id.May(instance) {
			sess.log.Info("access revoked: the key may no longer use the instance", "instance", instance)
			return errInstanceRevoked
		}
		return nil
	}
}

// isRevoked reports whether err is the registry's revocation.
func isRevoked(err error) bool {
	var revoked *sessions.RevokedError
	return errors.As(err, &revoked)
}
