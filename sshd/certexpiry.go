package sshd

import (
	"errors"
	"math"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/sessions"
)

// errCertExpired is what a client reads when its certificate expired while
// it was attached (after "access revoked: ").
var errCertExpired = errors.New("this certificate has expired")

// certExpiry returns when key stops being valid: a certificate's
// ValidBefore; false for a plain key or a certificate valid forever.
func certExpiry(key gossh.PublicKey) (time.Time, bool) {
	cert, ok := key.(*gossh.Certificate)
	if !ok || cert.ValidBefore == gossh.CertTimeInfinity || cert.ValidBefore > math.MaxInt64 {
		return time.Time{}, false
	}
	return time.Unix(int64(cert.ValidBefore), 0), true
}

// watchCertExpiry disconnects c, through the same Allowed check as a
// revocation (notice, exit status 1, connection closed), when the
// certificate the client authenticated with expires: nothing else would
// tell, since no reload happens then. The returned stop ends the watch and
// waits for it; attach calls it when the relay ends.
func watchCertExpiry(sess *session, c *sessions.Client) (stop func()) {
	at, ok := certExpiry(sess.key)
	if !ok {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-quit:
				return
			}
			// The timer runs on the monotonic clock, validity on the wall
			// clock: wait on if the latter was set back meanwhile.
			if left := time.Until(at); left > 0 {
				t.Reset(left)
				continue
			}
			sess.log.Info("certificate expired while attached", "valid_before", at.UTC().Format(time.RFC3339))
			c.Recheck()
			return
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
