package keys

import (
	"errors"
	"fmt"
)

// ErrUnknownToken: no token in the current file has the identifier.
var ErrUnknownToken = errors.New("token is not in the token file")

// Revoked is Recheck's refusal. Reason is written for the client (it is
// what sessions.RevokedError shows after "access revoked: "); Err, when
// set, is the store's detail for the log (errors.Is finds the sentinels:
// ErrUnknownKey, ErrFromMismatch, ErrKeyRefused, ErrCertUntrusted,
// ErrCertRevoked, ErrCertInvalid, ErrUnknownToken).
type Revoked struct {
	Reason string
	Err    error
}

func (e *Revoked) Error() string { return e.Reason }
func (e *Revoked) Unwrap() error { return e.Err }

// ByHash looks a token identifier (TokenHash of the token, or the one a
// login cookie carries) up in the current set, for Recheck: the identity
// the token has now, or an error wrapping ErrUnknownToken when it was
// removed.
func (s *TokenStore) ByHash(tokenHash []byte) (Identity, error) {
	id, ok := s.CheckHash(tokenHash)
	if !ok {
		return Identity{}, ErrUnknownToken
	}
	return id, nil
}

// Recheck decides whether a client that authenticated as was may stay
// attached to instance (its current name) after the credential files were
// reloaded. current derives the client's identity again from the current
// files, with what the listener kept from the authentication:
//
//   - a plain SSH key: KeyStore.Authorize with the key and the client's
//     address (from= is checked again);
//   - an SSH certificate: CAStore.AuthorizeCert with the certificate and
//     address: its CA must still be trusted, neither it nor its CA
//     @revoked, and it still valid now (an expired one is dropped);
//   - a bearer token or a login cookie: TokenStore.ByHash with TokenHash(token)
//     or the cookie's identifier.
//
// It returns nil when the credential is still there, still allows instance
// and grants no less than at attach; otherwise a *Revoked saying what
// changed. Losing the terminal (no-pty, restrict) or write access
// (read-only) also drops the client: it may reconnect with its new rights.
// A new name, new patterns that still match and wider rights change
// nothing. It is cheap (a map look-up, a constant-time scan of the tokens,
// or a certificate signature check) and safe for concurrent use; it is
// meant for sessions.AttachOptions.Allowed:
//
//	Allowed: func(instance string) error {
//		return keys.Recheck(id, instance, func() (keys.Identity, error) { return store.Authorize(key, remote) })
//	}
func Recheck(was Identity, instance string, current func() (Identity, error)) error {
	cred := was.Kind.Noun()
	now, err := current()
	if err != nil {
		return &Revoked{Reason: revokedReason(cred, err), Err: err}
	}
	// Compared on the instance, as the attach decided it (On).
	before, after := was.On(instance, Switches{}), now.On(instance, Switches{})
	switch {
	case !after.Use:
		return &Revoked{Reason: fmt.Sprintf("your %s may no longer use instance %q", cred, instance)}
	case before.PTY && !after.PTY:
		return &Revoked{Reason: fmt.Sprintf("your %s may no longer open a terminal (no-pty)", cred)}
	case before.Write && !after.Write:
		return &Revoked{Reason: fmt.Sprintf("your %s is now read-only: reconnect to watch", cred)}
	}
	return nil
}

// revokedReason says, for the client, why its credential no longer works.
func revokedReason(cred string, err error) string {
	switch {
	case errors.Is(err, ErrUnknownKey):
		return "your key was removed from authorized_keys"
	case errors.Is(err, ErrFromMismatch):
		return "your key's from= no longer allows your address"
	case errors.Is(err, ErrKeyRefused):
		return "your key's authorized_keys line now has an option termgate cannot honour"
	case errors.Is(err, ErrCertUntrusted):
		return "your certificate's CA is no longer trusted"
	case errors.Is(err, ErrCertRevoked):
		return "your certificate or its CA was revoked"
	case errors.Is(err, ErrCertInvalid):
		return "your certificate is no longer valid (expired, or its options no longer allow you)"
	case errors.Is(err, ErrUnknownToken):
		return "your token was removed from the token file"
	}
	return fmt.Sprintf("your %s is no longer accepted", cred)
}
