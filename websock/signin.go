package websock

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/termgate/termgate/oidc"
)

// An OpenID Connect sign-in (contract, "Single sign-on") is a signed
// cookie, like a token login (login.go), whose payload is JSON: the
// sign-in's random ID, the identity's subject, email and groups, and its
// expiry (the ID token's, at most Config.OIDCSessionMax). What the identity
// may do is worked out from Config.Policies on every request, so a policy
// change applies at once; a group removed at the provider applies at the
// next sign-in, and at the latest at the expiry. A logout records the ID
// in the shared sign-in state (oidc.Store, Config.SigninState) until its
// expiry: it holds across restarts and on every gateway sharing the state
// directory, and forgets the SSH keys that sign-in approved.

const (
	oidcCookie        = "termgate_oidc"
	oidcPendingCookie = "termgate_oidc_pending"
	signinVersion     = 2 // 2: with iss and email_verified
	// maxSigninCookie bounds what openJSON decodes: the claims are
	// bounded by the oidc package, so a valid cookie is far smaller.
	maxSigninCookie = 16 << 10
)

// signin is an OIDC cookie's payload.
type signin struct {
	V        int       `json:"v"`
	ID       string    `json:"id"`
	Issuer   string    `json:"iss"`
	Subject  string    `json:"sub"`
	Email    string    `json:"email"`
	Verified bool      `json:"email_verified"`
	Groups   []string  `json:"groups"`
	Expires  time.Time `json:"exp"`
}

// pendingSignin is the pending cookie's: one sign-in between the redirect
// to the provider and its callback.
type pendingSignin struct {
	V        int       `json:"v"`
	State    string    `json:"state"`
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	Expires  time.Time `json:"exp"`
	// Next is where the browser goes after signing in: / or an SSH
	// sign-in's approval page.
	Next string `json:"next,omitempty"`
}

var (
	errSigninMalformed = errors.New("malformed sign-in cookie: sign in again")
	errSigninExpired   = errors.New("sign-in expired: sign in again")
	errSignedOut       = errors.New("signed out: sign in again")
)

// sealJSON signs v as a cookie value. The MAC covers a domain-separating
// prefix, so a token login's value can never pass as a sign-in or the
// other way round.
func (c *cookies) sealJSON(kind string, v any) string {
	b, _ := json.Marshal(v) // the payload types always marshal
	return cookieB64.EncodeToString(b) + "." + cookieB64.EncodeToString(c.mac(append([]byte(kind+"\x00"), b...)))
}

// openJSON checks a sealJSON value's MAC before decoding it into v.
func (c *cookies) openJSON(kind, value string, v any) error {
	if len(value) > maxSigninCookie {
		return errSigninMalformed
	}
	p64, m64, ok := strings.Cut(value, ".")
	if !ok || len(m64) != cookieB64.EncodedLen(sha256.Size) {
		return errSigninMalformed
	}
	payload, err1 := cookieB64.DecodeString(p64)
	mac, err2 := cookieB64.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return errSigninMalformed
	}
	if !hmac.Equal(mac, c.mac(append([]byte(kind+"\x00"), payload...))) {
		return errCookieSignature
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return errSigninMalformed
	}
	return nil
}

// signins asks the shared state (oidc.Store) which sign-ins logged out,
// and remembers the expiries of those that attached clients, so that the
// watcher (watchSignins) cuts those clients in time.
type signins struct {
	state  *oidc.Store
	log    *slog.Logger
	mu     sync.Mutex
	attach map[string]time.Time // sign-ins with attached clients → expiry
	dirty  bool                 // a logout here since the last recheck
}

func newSignins(state *oidc.Store, log *slog.Logger) *signins {
	return &signins{state: state, log: log, attach: map[string]time.Time{}}
}

func (s *signins) isRevoked(id string) bool { return s.state.LoggedOut(id) }

// revoke logs the sign-in id out everywhere (the shared state), and with
// it the SSH keys it approved.
func (s *signins) revoke(id string, exp time.Time) {
	if err := s.state.Logout(id, exp); err != nil {
		s.log.Error("logout not written to the shared sign-in state: other gateways honour the sign-in until they restart or it expires", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = true
}

func (s *signins) attached(id string, exp time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attach[id] = exp
}

// due reports whether a recheck is needed now: a logout happened or an
// attached sign-in expired. It forgets what it reported, and revocations
// past their expiry.
func (s *signins) due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := s.dirty
	s.dirty = false
	for id, exp := range s.attach {
		if !now.Before(exp) {
			delete(s.attach, id)
			due = true
		}
	}
	return due
}

// check is a signed-in connection's Allowed part: not logged out, not
// expired.
func (s *signins) check(si signin, now time.Time) error {
	if s.isRevoked(si.ID) {
		return errSignedOut
	}
	if !now.Before(si.Expires) {
		return errSigninExpired
	}
	return nil
}
