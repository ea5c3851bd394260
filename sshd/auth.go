package sshd

import (
	"net"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
)

// Authorizer decides which public keys may log in and what they may do;
// *keys.KeyStore implements it. The error is for the log, never shown to
// the client.
type Authorizer interface {
	Authorize(key gossh.PublicKey, remote net.Addr) (keys.Identity, error)
}

// publicKey is the handshake's public-key callback. x/crypto calls it for
// every key the client offers, also keys it never signs with, so nothing is
// stored here: the auth middleware derives the identity again from the key
// that was verified.
func (s *Server) publicKey(ctx ssh.Context, key ssh.PublicKey) (ok bool) {
	log := s.log
	if cs := connStateOf(ctx); cs != nil {
		log = cs.log
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("panic while authorizing a key", "panic", p)
			ok = false
		}
	}()
	if _, err := s.cfg.Keys.Authorize(key, ctx.RemoteAddr()); err != nil {
		log.Debug("public key refused", "user", ctx.User(), "key", gossh.FingerprintSHA256(key), "err", err)
		return false
	}
	return true
}

// authenticate derives the session's identity from the key the client
// authenticated with (the one whose signature was verified), asking the
// Authorizer again, so a key removed since the handshake opens no new
// session. The identity goes into the connection's context, where
// identityFrom finds it.
func (s *Server) authenticate(next ssh.Handler) ssh.Handler {
	return func(gs ssh.Session) {
		sess := sessOf(gs)
		key := gs.PublicKey()
		var verified gossh.PublicKey
		if cs := connStateOf(gs.Context()); cs != nil {
			verified = cs.verifiedKey()
		}
		if key == nil || !ssh.KeysEqual(key, verified) {
			sess.log.Error("session without a verified public key")
			sess.errorf("permission denied")
			sess.end(1)
			return
		}
		id, err := s.cfg.Keys.Authorize(key, gs.RemoteAddr())
		if err != nil {
			sess.log.Info("key no longer authorized", "err", err)
			sess.errorf("permission denied")
			sess.end(1)
			return
		}
		gs.Context().SetValue(ctxKeyIdentity, id)
		sess.log = sess.log.With("identity", id.Name)
		next(gs)
	}
}

// identityFrom returns the identity the auth middleware stored.
func identityFrom(ctx ssh.Context) (keys.Identity, bool) {
	id, ok := ctx.Value(ctxKeyIdentity).(keys.Identity)
	return id, ok
}
