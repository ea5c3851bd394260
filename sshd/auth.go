package sshd

import (
	"errors"
	"fmt"
	"net"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
)

var (
	errCertsNotAccepted = errors.New("certificates are not accepted: no trusted user CA is configured")
	errKeyConnLimit     = errors.New("too many connections for this key")
	errPermissionDenied = errors.New("permission denied")
)

// Authorizer decides which public keys may log in and what they may do;
// *keys.KeyStore implements it. The error is for the log, never shown to
// the client.
type Authorizer interface {
	Authorize(key gossh.PublicKey, remote net.Addr) (keys.Identity, error)
}

// CertAuthorizer decides which OpenSSH user certificates may log in and
// what they may do; *keys.CAStore implements it. The error is for the log.
type CertAuthorizer interface {
	AuthorizeCert(cert *gossh.Certificate, remote net.Addr) (keys.Identity, error)
}

// authorize derives the identity of a plain key (Config.Keys) or of a
// certificate (Config.UserCAs). A certificate is judged as a certificate
// only: its key is not looked up in authorized_keys.
func (s *Server) authorize(key gossh.PublicKey, remote net.Addr) (keys.Identity, error) {
	if s.cfg.SignIn != nil && s.cfg.SignIn.Required { // --oidc-ssh=required: browser sign-ins only
		if id, ok := s.signedIn(key); ok {
			return id, nil
		}
		return keys.Identity{}, fmt.Errorf("key %s: %w (every key signs in through the browser here)", gossh.FingerprintSHA256(key), keys.ErrUnknownKey)
	}
	if cert, ok := key.(*gossh.Certificate); ok {
		if s.cfg.UserCAs == nil {
			return keys.Identity{}, fmt.Errorf("certificate for %s: %w", gossh.FingerprintSHA256(cert.Key), errCertsNotAccepted)
		}
		return s.cfg.UserCAs.AuthorizeCert(cert, remote)
	}
	id, err := s.cfg.Keys.Authorize(key, remote)
	if err != nil {
		if sid, ok := s.signedIn(key); ok { // a key signed in through the browser (signin.go)
			return sid, nil
		}
	}
	return id, err
}

// publicKey is the handshake's public-key callback. x/crypto calls it for
// every key the client offers, also keys it never signs with, so nothing is
// stored here: the identity is derived again for the key that was verified
// (serverConfig) and for every session (authenticate). A locked-out source
// is refused whatever the key.
func (s *Server) publicKey(cs *connState, user string, key gossh.PublicKey) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			cs.log.Error("panic while authorizing a key", "panic", p)
			ok = false
		}
	}()
	if until, locked := s.lim.lockedOut(cs.src); locked {
		cs.refused(key, fmt.Sprintf("%s until %s", refusedLockedOut, until.UTC().Format(time.RFC3339)))
		return false
	}
	if _, err := s.authorize(key, cs.remote); err != nil {
		if errors.Is(err, keys.ErrFromMismatch) {
			// A known key refused for its address is the operator's
			// question (a moved client, a too narrow from=), not a
			// scanner's noise: say it at Warn, not only in the audit
			// trail. Lock-outs bound how often a source can cause it.
			cs.log.Warn("key refused: its from= in authorized_keys does not allow this address; widen from= if it should log in",
				"user", user, "key", gossh.FingerprintSHA256(key))
		}
		cs.log.Debug("public key refused", "user", user, "key", gossh.FingerprintSHA256(key), "err", err)
		cs.refused(key, err.Error())
		return false
	}
	return true
}

// authenticate derives the session's identity from the key the client
// authenticated with (the one whose signature was verified), asking the
// Authorizer again, so a key removed since the handshake (or a certificate
// that expired) opens no new session. (The key's session slot was taken
// when the channel opened, see sessionChannel.)
func (s *Server) authenticate(next handler) handler {
	return func(sess *session) {
		if sess.key == nil {
			sess.log.Error("session without a verified public key")
			sess.errorf("permission denied")
			sess.end(1)
			return
		}
		id, err := s.authorize(sess.key, sess.remote)
		if err != nil {
			sess.log.Warn("key no longer authorized", "err", err)
			sess.errorf("permission denied")
			sess.end(1)
			return
		}
		sess.id, sess.hasID = id, true
		// From here on a line says who, not the connection's details
		// (the debug "session opened" line and the audit trail have them).
		base := s.log
		if base == nil { // a bare Server in unit tests
			base = sess.log
		}
		sess.log = base.With("via", "ssh", "who", id.Name)
		next(sess)
	}
}

// who is an identity in the audit trail.
func who(id keys.Identity, remote net.Addr) audit.Who {
	w := audit.Who{Via: "ssh", Name: id.Name, Key: id.Fingerprint}
	if remote != nil {
		w.Remote = remote.String()
	}
	return w
}

// auditAuthSuccess records a connection's successful authentication.
func (s *Server) auditAuthSuccess(cs *connState, user string) {
	cs.mu.Lock()
	id, failures := cs.identity, cs.failures
	cs.mu.Unlock()
	cs.log.Debug("authenticated", "identity", id.Name, "key", id.Fingerprint, "user", user)
	s.cfg.Audit.Event(audit.AuthSuccess, who(id, cs.remote), "", "", "user", user, "failed_attempts", failures)
}

// connEnded settles a connection that closed: its slots are released and,
// when it tried to authenticate and never did, the failure is counted
// against its source (perhaps locking it out) and audited.
func (s *Server) connEnded(cs *connState) {
	cs.preauth()
	cs.mu.Lock()
	if cs.keySlot != nil {
		cs.keySlot()
	}
	authed, failures, capRefusals := cs.authDone, cs.failures, cs.capRefusals
	lastKey, reason, user := cs.lastKey, cs.lastReason, cs.user
	cs.mu.Unlock()
	if authed || failures == 0 {
		return
	}
	detail := []any{"user", user, "reason", reason, "attempts", failures}
	if failures > capRefusals { // being over MaxConnsPerKey is no guess
		if until, started := s.lim.failed(cs.src); started {
			cs.log.Warn("source locked out after repeated authentication failures",
				"source", cs.src.String(), "failures", s.cfg.AuthFailLimit, "window", s.cfg.AuthFailWindow, "until", until.UTC().Format(time.RFC3339))
			detail = append(detail, "locked_out_until", until.UTC().Format(time.RFC3339))
		}
	}
	cs.log.Debug("authentication failed", detail...)
	s.cfg.Audit.Event(audit.AuthFailure, audit.Who{Via: "ssh", Key: lastKey, Remote: cs.remote.String()}, "", "", detail...)
}
