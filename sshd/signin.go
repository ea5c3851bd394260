package sshd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/oidc"
)

// Signing in over plain ssh (contract, "Single sign-on"; issue 24 item
// 2). A key no authorized_keys line accepts is let to prove that the
// client holds it (the query is accepted, the signed attempt verified and
// then refused: signInProbe, connState.proved), so the client moves on to
// keyboard-interactive, which answers with a URL under the gateway's
// public URL and a code and waits (SignIn.Wait) for a browser to sign in,
// type the code and approve (websock's /ssh page; the URL never carries
// the code, so a link someone sends cannot approve their key). Approved,
// the proven keys are remembered for the identity (oidc.Store, shared by
// the gateways on the state directory) until the key TTL or the
// approving browser sign-in's logout or expiry, authorize
// finds them as it finds authorized_keys lines, and the connection goes on
// as that identity with its first proven key. Nothing is ever bound to a
// key the client did not sign with. (A partial success asking for a key
// after keyboard-interactive would be simpler, but OpenSSH does not go
// back to publickey once it has moved past it.)

// SignIn configures SSH sign-in through the identity provider.
type SignIn struct {
	Broker   *oidc.Broker
	Keys     *oidc.Store
	Policies keys.Policies
	// URL is the approval page, where the code is typed: PUBLIC_URL/ssh.
	URL string
	// Provider names the provider in the prompt.
	Provider string
	// Wait bounds how long a connection waits for its browser (default
	// 5 minutes).
	Wait time.Duration
	// Required (--oidc-ssh=required): every key signs in through the
	// browser; authorized_keys and certificates let nobody in.
	Required bool
}

// extProbe marks a key accepted only so that the client proves it holds
// it (signInProbe).
const extProbe = "termgate-signin-probe"

// maxProven bounds the keys one connection may prove for a sign-in.
const maxProven = 5

// signInProbe reports whether an unknown key is let to prove itself for a
// sign-in: with SignIn, not a certificate, and not past maxProven.
func (s *Server) signInProbe(cs *connState, key gossh.PublicKey) bool {
	if s.cfg.SignIn == nil {
		return false
	}
	if _, isCert := key.(*gossh.Certificate); isCert && !s.cfg.SignIn.Required {
		return false
	}
	if _, locked := s.lim.lockedOut(cs.src); locked {
		return false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.proven) < maxProven
}

// proved records a key whose signature verified.
func (cs *connState) proved(key gossh.PublicKey) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.proven) < maxProven {
		cs.proven = append(cs.proven, key)
	}
}

// signedIn is the identity a signed-in key stands for, while its TTL lasts
// and a policy covers it.
func (s *Server) signedIn(key gossh.PublicKey) (keys.Identity, bool) {
	if s.cfg.SignIn == nil {
		return keys.Identity{}, false
	}
	fp := gossh.FingerprintSHA256(key)
	a, ok := s.cfg.SignIn.Keys.Lookup(fp, time.Now())
	if !ok {
		return keys.Identity{}, false
	}
	id, ok := s.cfg.SignIn.Policies.Identity(a.Email, a.Groups, a.Verified)
	if !ok {
		return keys.Identity{}, false
	}
	id.Fingerprint = fp
	return id, true
}

// keyboardInteractive is the handshake's keyboard-interactive callback
// (only with SignIn): the sign-in URL and code, then the wait.
func (s *Server) keyboardInteractive(cs *connState, meta gossh.ConnMetadata, challenge gossh.KeyboardInteractiveChallenge) (*gossh.Permissions, error) {
	si := s.cfg.SignIn
	if until, locked := s.lim.lockedOut(cs.src); locked {
		return nil, fmt.Errorf("%s until %s", refusedLockedOut, until.UTC().Format(time.RFC3339))
	}
	cs.mu.Lock()
	proven, ended := slices.Clone(cs.proven), cs.signinEnded
	cs.mu.Unlock()
	if ended { // OpenSSH asks again after a failure: the answer stands
		return nil, errPermissionDenied
	}
	if len(proven) == 0 {
		return nil, &gossh.BannerError{Err: errPermissionDenied,
			Message: "termgate: signing in needs an SSH key (run ssh-keygen, or pass one with -i): the gateway remembers it for your identity\r\n"}
	}
	fps := make([]string, len(proven))
	for i, k := range proven {
		fps[i] = gossh.FingerprintSHA256(k)
	}
	remote := meta.RemoteAddr().String()
	pending, err := si.Broker.Begin(oidc.Request{Remote: remote, User: meta.User(), ClientVersion: string(meta.ClientVersion()), Fingerprints: fps})
	if err != nil {
		return nil, err
	}
	defer si.Broker.End(pending)
	wait := si.Wait
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	msg := fmt.Sprintf("termgate: this key (%s) is not known here. To sign in with %s, open\r\n\r\n    %s\r\n\r\nin a browser, sign in, and type this code there:\r\n\r\n    %s\r\n\r\nCheck that the page shows this key before you approve (this waits %s).\r\n",
		fps[0], si.Provider, si.URL, pending.Code, wait)
	if _, err := challenge("", msg, nil, nil); err != nil {
		return nil, err
	}
	// The wait outlasts the handshake's deadline: it is the person's.
	_ = cs.nc.SetDeadline(time.Now().Add(wait + 10*time.Second))
	ctx, cancel := context.WithTimeout(cs.ctx, wait)
	defer cancel()
	a, err := pending.Wait(ctx)
	if err != nil {
		cs.mu.Lock()
		cs.signinEnded = true
		cs.mu.Unlock()
	}
	if errors.Is(err, oidc.ErrDenied) {
		cs.log.Info("sign-in denied in the browser", "by", a.Email)
		return nil, &gossh.BannerError{Err: errPermissionDenied,
			Message: fmt.Sprintf("termgate: %s denied this sign-in in the browser; nothing was let in. If that was you by mistake, run ssh again for a new code.\r\n", a.Email)}
	}
	if err != nil {
		return nil, &gossh.BannerError{Err: errPermissionDenied,
			Message: fmt.Sprintf("termgate: no browser approved the sign-in in %s; run ssh again to get a new code\r\n", wait)}
	}
	if _, ok := si.Policies.Identity(a.Email, a.Groups, a.EmailVerified); !ok {
		return nil, &gossh.BannerError{Err: errPermissionDenied,
			Message: fmt.Sprintf("termgate: signed in as %s, but no policy of this gateway gives that identity access\r\n", a.Email)}
	}
	now := time.Now()
	for _, fp := range fps {
		err := si.Keys.Remember(oidc.KeyRecord{Fingerprint: fp, Issuer: a.Issuer, Subject: a.Subject, Email: a.Email, Verified: a.EmailVerified,
			Groups: a.Groups, SigninID: a.SigninID, Remote: remote, Approved: now, Expires: a.Expires})
		if err != nil {
			cs.log.Warn("an approved key was not remembered", "fingerprint", fp, "err", err)
			return nil, &gossh.BannerError{Err: errPermissionDenied, Message: "termgate: " + err.Error() + "\r\n"}
		}
	}
	key := proven[0]
	id, err := s.authorize(key, cs.remote)
	if err != nil {
		return nil, err
	}
	slot, ok := s.lim.keyConn(capKey(key))
	if !ok {
		return nil, &gossh.BannerError{Err: errKeyConnLimit,
			Message: fmt.Sprintf("termgate: this key already has %d connections open; close one and try again\r\n", s.cfg.MaxConnsPerKey)}
	}
	cs.setVerified(key, id, slot)
	cs.log.Info("signed in through the browser", "who", a.Email, "keys", len(proven), "until", a.Expires.UTC().Format(time.RFC3339))
	return &gossh.Permissions{}, nil
}

// whoami prints who this key is (ssh HOST whoami): its name, how it got
// in, and what it may do.
func (s *Server) whoami(sess *session, id keys.Identity) int {
	how := "authorized_keys"
	if _, err := s.cfg.Keys.Authorize(sess.key, sess.remote); err != nil {
		if a, ok := s.signedInAs(sess.key); ok {
			how = fmt.Sprintf("signed in with %s until %s, groups %s", s.cfg.SignIn.Provider, a.Expires.UTC().Format(time.RFC3339), strings.Join(a.Groups, ","))
			if !a.Verified {
				how += ", email not verified by the provider"
			}
		} else if _, isCert := sess.key.(*gossh.Certificate); isCert {
			how = "certificate"
		}
	}
	_, _ = fmt.Fprintf(sess, "%s (key %s, %s): %s\n", id.Name, id.Fingerprint, how, keys.Describe(id))
	return 0
}

// logout forgets this key's sign-in (ssh HOST logout) and cuts what it
// has attached, as a revocation does.
func (s *Server) logout(sess *session, id keys.Identity) int {
	if s.cfg.SignIn == nil {
		sess.errorf("this key is not signed in with an identity provider (it is in authorized_keys, or a certificate): nothing to forget")
		return 1
	}
	forgot, err := s.cfg.SignIn.Keys.Forget(gossh.FingerprintSHA256(sess.key), "", "")
	if err != nil {
		sess.log.Warn("logout: not written to the shared state; other gateways let the key in until its expiry", "err", err)
	}
	if !forgot {
		sess.errorf("this key is not signed in with an identity provider (it is in authorized_keys, or a certificate): nothing to forget")
		return 1
	}
	sess.log.Info("signed out", "who", id.Name)
	s.cfg.Audit.Event(audit.Detach, who(id, sess.remote), "", "", "reason", "logout")
	_, _ = fmt.Fprintf(sess, "signed out %s: this key is forgotten; the next ssh signs in again\n", id.Name)
	s.cfg.Registry.Recheck()
	s.Recheck()
	return 0
}

// signedInAs is the sign-in a key stands for, while it lasts.
func (s *Server) signedInAs(key gossh.PublicKey) (oidc.KeyRecord, bool) {
	if s.cfg.SignIn == nil {
		return oidc.KeyRecord{}, false
	}
	return s.cfg.SignIn.Keys.Lookup(gossh.FingerprintSHA256(key), time.Now())
}

// listKeys lists the keys remembered for this key's identity (ssh HOST
// keys): the identity is the provider's account (issuer and subject), so
// an email that changed hands does not bring another person's keys.
func (s *Server) listKeys(sess *session, id keys.Identity) int {
	me, ok := s.signedInAs(sess.key)
	if !ok {
		sess.errorf("this key is not signed in with an identity provider (it is in authorized_keys, or a certificate): it has no remembered keys; sign in with a key the gateway does not know to get one")
		return 1
	}
	now := time.Now()
	_, _ = fmt.Fprintf(sess, "SSH keys remembered for %s (forget one with: ssh HOST keys forget FINGERPRINT):\n", id.Name)
	for _, k := range s.cfg.SignIn.Keys.KeysOf(me.Issuer, me.Subject, now) {
		this := ""
		if k.Fingerprint == me.Fingerprint {
			this = "  (this key)"
		}
		_, _ = fmt.Fprintf(sess, "%s  approved %s from %s, until %s%s\n", k.Fingerprint, k.Approved.UTC().Format(time.RFC3339), k.Remote, k.Expires.UTC().Format(time.RFC3339), this)
	}
	return 0
}

// forgetKey forgets one of the identity's remembered keys (ssh HOST keys
// forget FINGERPRINT) and cuts what it attached.
func (s *Server) forgetKey(sess *session, id keys.Identity, fp string) int {
	me, ok := s.signedInAs(sess.key)
	if !ok {
		sess.errorf("this key is not signed in with an identity provider: it can forget no remembered keys (sign in through the browser, or use the page's list)")
		return 1
	}
	forgot, err := s.cfg.SignIn.Keys.Forget(fp, me.Issuer, me.Subject)
	if err != nil {
		sess.log.Warn("keys forget: not written to the shared state; other gateways let the key in until its expiry", "err", err)
	}
	if !forgot {
		sess.errorf(fmt.Sprintf("no key %s is remembered for %s: ssh HOST keys lists them", fp, id.Name))
		return 1
	}
	sess.log.Info("forgot a remembered key", "who", id.Name, "fingerprint", fp)
	s.cfg.Audit.Event(audit.Detach, who(id, sess.remote), "", "", "reason", "key forgotten", "fingerprint", fp, "iss", me.Issuer, "sub", me.Subject)
	_, _ = fmt.Fprintf(sess, "forgot %s: its next ssh signs in again through the browser\n", fp)
	s.cfg.Registry.Recheck()
	s.Recheck()
	return 0
}

// Pending is the sign-in's broker, nil for a nil SignIn (so a gateway
// without single sign-on passes none to the approval page).
func (si *SignIn) Pending() *oidc.Broker {
	if si == nil {
		return nil
	}
	return si.Broker
}
