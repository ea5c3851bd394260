package sshd

import (
	"context"
	"fmt"
	"net"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/oidc"
)

// Signing in over plain ssh (contract, "Single sign-on"; issue 24 item
// 2). A key no authorized_keys line accepts is refused as before; the
// client then tries keyboard-interactive, which answers with a URL under
// the gateway's public URL and a code, and waits (SignIn.Wait) for a
// browser to sign in and approve (websock's /ssh/CODE page). Approved, it
// returns a partial success that asks for a public key: the client offers
// its keys again, any one is accepted, and once its signature is verified
// (serverConfig's VerifiedPublicKeyCallback) the key is remembered for the
// identity until the key TTL (oidc.Keys), so authorize finds it like an
// authorized_keys line, for this connection and the next ones. Nothing is
// bound to a key the client did not prove it holds.

// SignIn configures SSH sign-in through the identity provider.
type SignIn struct {
	Broker   *oidc.Broker
	Keys     *oidc.Keys
	Policies keys.Policies
	// URL is the approval page for a code: PUBLIC_URL/ssh/CODE.
	URL func(code string) string
	// Provider names the provider in the prompt.
	Provider string
	// Wait bounds how long a connection waits for its browser (default
	// 5 minutes).
	Wait time.Duration
}

// extSignin marks the permissions of a key accepted after a browser
// sign-in (the partial success's public-key step).
const extSignin = "termgate-signin"

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
	id, ok := s.cfg.SignIn.Policies.Identity(a.Email, a.Groups)
	if !ok {
		return keys.Identity{}, false
	}
	id.Fingerprint = fp
	return id, true
}

// keyboardInteractive is the handshake's keyboard-interactive callback
// (only with SignIn): the sign-in URL and code, then the wait.
func (s *Server) keyboardInteractive(cs *connState, remote net.Addr, challenge gossh.KeyboardInteractiveChallenge) (*gossh.Permissions, error) {
	si := s.cfg.SignIn
	if until, locked := s.lim.lockedOut(cs.src); locked {
		return nil, fmt.Errorf("%s until %s", refusedLockedOut, until.UTC().Format(time.RFC3339))
	}
	pending, err := si.Broker.Begin(remote.String())
	if err != nil {
		return nil, err
	}
	defer si.Broker.End(pending)
	wait := si.Wait
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	msg := fmt.Sprintf("termgate: this key is not known here. To sign in with %s, open\r\n\r\n    %s\r\n\r\nin a browser and approve the code %s (this waits %s).\r\n",
		si.Provider, si.URL(pending.Code), pending.Code, wait)
	if _, err := challenge("", msg, nil, nil); err != nil {
		return nil, err
	}
	// The wait outlasts the handshake's deadline: it is the person's.
	_ = cs.nc.SetDeadline(time.Now().Add(wait + 10*time.Second))
	ctx, cancel := context.WithTimeout(cs.ctx, wait)
	defer cancel()
	a, err := pending.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("no browser approved the sign-in in %s", wait)
	}
	if _, ok := si.Policies.Identity(a.Email, a.Groups); !ok {
		return nil, &gossh.BannerError{Err: errPermissionDenied,
			Message: fmt.Sprintf("termgate: signed in as %s, but no policy of this gateway gives that identity access\r\n", a.Email)}
	}
	cs.mu.Lock()
	cs.signin = &a
	cs.mu.Unlock()
	cs.log.Info("signed in through the browser; asking for a key", "who", a.Email)
	return nil, &gossh.PartialSuccessError{Next: gossh.ServerAuthCallbacks{
		PublicKeyCallback: func(gossh.ConnMetadata, gossh.PublicKey) (*gossh.Permissions, error) {
			return &gossh.Permissions{Extensions: map[string]string{extSignin: pending.Code}}, nil
		},
	}}
}

// bindSignedIn remembers a verified key for the connection's sign-in.
func (s *Server) bindSignedIn(cs *connState, key gossh.PublicKey, perms *gossh.Permissions) {
	if s.cfg.SignIn == nil || perms == nil || perms.Extensions[extSignin] == "" {
		return
	}
	cs.mu.Lock()
	a := cs.signin
	cs.mu.Unlock()
	if a == nil {
		return
	}
	s.cfg.SignIn.Keys.Remember(gossh.FingerprintSHA256(key), *a)
	cs.log.Info("key remembered for the sign-in", "who", a.Email, "key", gossh.FingerprintSHA256(key), "until", a.Expires.UTC().Format(time.RFC3339))
}
