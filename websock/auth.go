package websock

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
)

// TokenChecker checks HTTP bearer tokens, and the token identifiers that
// login cookies carry (keys.TokenStore satisfies it).
type TokenChecker interface {
	// Check looks a presented token up.
	Check(token string) (keys.Identity, bool)
	// CheckHash looks a token up by its identifier, keys.TokenHash(token).
	CheckHash(tokenHash []byte) (keys.Identity, bool)
}

var errTokenInQuery = errors.New("tokens are not accepted in the URL query (it ends up in logs and browser history): send an Authorization: Bearer header, or log in at POST /api/login (the browser page takes a token after # in its address, which is never sent to the server)")

// authMethod says how a request proved who it is.
type authMethod int

const (
	byBearer authMethod = iota + 1
	byCookie
	bySignin // an OpenID Connect sign-in's cookie (oidc.go)
)

// caller is an authenticated request's identity.
type caller struct {
	id     keys.Identity
	method authMethod
	// tokenHash names the token behind the credential (keys.TokenHash):
	// live connections look it up again on every authorization check, so
	// removing the token from the file ends them.
	tokenHash []byte
	// signin is the sign-in behind a bySignin caller.
	signin *signin
	// access is the one access decision (keys.Identity.On) on the
	// instance the route names; the zero Access (nothing allowed) on
	// routes without one.
	access keys.Access
}

type callerKey struct{}

// callerFrom returns the caller that authed stored in the request context.
func callerFrom(ctx context.Context) (caller, bool) {
	c, ok := ctx.Value(callerKey{}).(caller)
	return c, ok
}

// routeKind says what a route does, for the Origin rule and the audit.
type routeKind int

const (
	// readRoute changes nothing: a cookie without an Origin header will
	// do (a foreign Origin is still refused).
	readRoute routeKind = iota
	// actRoute attaches or resets (WebSocket upgrades and POSTs): a cookie
	// needs an allowed Origin, and the authentication is audited.
	actRoute
)

// authed wraps h with the Origin rules and authentication: 403 for a
// refused Origin, 401 without a valid credential, 429 from an address
// locked out after failed authentications.
//
// A foreign Origin is refused before any credential is looked at, so a page
// on another site can neither probe credentials through a user's browser
// nor spend that address's failure allowance and lock the user out.
func (s *Server) authed(kind routeKind, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			if err := s.hosts.check(r); err != nil {
				s.refuseHost(w, r, err)
				return
			}
		}
		if err := s.origins.check(r, false); err != nil {
			s.refuseOrigin(w, r, caller{}, err)
			return
		}
		c, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		if name := r.PathValue("name"); name != "" {
			c.access = c.id.On(name, s.cfg.Switches) // once per request, on the instance it names
		}
		// A GET without the upgrade acts on nothing (the terminal route's
		// probe, handleTerminal): it needs no Origin, as a read does; the
		// SameSite=Strict cookie keeps other sites from sending it.
		if kind == actRoute && (r.Method != http.MethodGet || websocket.IsWebSocketUpgrade(r)) {
			if err := s.origins.check(r, c.method == byCookie || c.method == bySignin); err != nil {
				s.refuseOrigin(w, r, c, err)
				return
			}
			s.cfg.Audit.Event(audit.AuthSuccess, s.who(r, c), r.PathValue("name"), "", "method", c.method.String())
		}
		h(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// authenticate finds the request's credential, or answers. A bearer header
// wins over the cookie; a bad one is refused even with a good cookie.
//
// Only a token is ever guessed: a wrong one gets 401, is audited and spends
// one of the address's failed authentications, and a token from an address
// that has none left gets 429 without being checked. A malformed header, or
// a login cookie that is malformed, not signed with this gateway's cookie
// key, expired or whose token was removed, gets 401 and is audited but
// costs nothing: forging a cookie means breaking HMAC-SHA256 with a 256-bit
// key (nothing to guess), and browsers keep presenting stale ones. For the
// same reason a valid login cookie works from a locked-out address. A
// request without any credential gets 401 only.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (caller, bool) {
	token, hasBearer, err := bearer(r)
	if err != nil {
		s.credentialRefused(w, r, err.Error())
		return caller{}, false
	}
	if hasBearer {
		if s.lockedOut(w, r) {
			return caller{}, false
		}
		id, ok := s.cfg.Tokens.Check(token)
		if !ok {
			s.authFailed(w, r, "invalid token")
			return caller{}, false
		}
		return caller{id: id, method: byBearer, tokenHash: keys.TokenHash(token)}, true
	}
	ck, err := r.Cookie(cookieName)
	if err != nil {
		if sc, err := r.Cookie(oidcCookie); err == nil && s.cfg.OIDC != nil {
			return s.signinCaller(w, r, sc.Value)
		}
		s.unauthorized(w, r, "authentication required: send an Authorization: Bearer header, or log in at POST /api/login")
		return caller{}, false
	}
	tokenHash, err := s.cookies.verify(ck.Value)
	if err != nil {
		s.credentialRefused(w, r, err.Error())
		return caller{}, false
	}
	id, ok := s.cfg.Tokens.CheckHash(tokenHash)
	if !ok {
		s.credentialRefused(w, r, "the token of this login is no longer valid: log in again")
		return caller{}, false
	}
	return caller{id: id, method: byCookie, tokenHash: tokenHash}, true
}

// lockedOut answers 429 when r's address has used up its failed
// authentications.
func (s *Server) lockedOut(w http.ResponseWriter, r *http.Request) bool {
	if s.failures == nil {
		return false
	}
	blocked, retry := s.failures.blocked(clientKey(r.RemoteAddr))
	if !blocked {
		return false
	}
	s.log.Debug("authentication refused: address locked out", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
	tooMany(w, retry, "too many failed authentications from your address: try again later")
	return true
}

// credentialRefused answers 401 to a credential that was not a token
// guess (see authenticate), and audits it.
func (s *Server) credentialRefused(w http.ResponseWriter, r *http.Request, reason string) {
	s.auditFailure(r, caller{}, r.PathValue("name"), reason)
	s.unauthorized(w, r, reason)
}

// authFailed records a wrong token (audit, lock-out allowance) and answers
// 401 with reason, which never quotes the token.
func (s *Server) authFailed(w http.ResponseWriter, r *http.Request, reason string) {
	detail := []any{"reason", reason}
	if s.failures != nil && s.failures.take(clientKey(r.RemoteAddr)) {
		detail = append(detail, "locked_out", true)
		s.log.Warn("too many failed authentications: refusing credentials from this address for a while", "remote", r.RemoteAddr)
	}
	s.cfg.Audit.Event(audit.AuthFailure, s.who(r, caller{}), r.PathValue("name"), "", detail...)
	s.unauthorized(w, r, reason)
}

// auditFailure records a refusal that is not a wrong token (a token in
// the URL, a malformed header, a stale cookie, a refused Origin, a
// forbidden instance): audited, but it does not count towards the lock-out.
func (s *Server) auditFailure(r *http.Request, c caller, instance, reason string) {
	s.cfg.Audit.Event(audit.AuthFailure, s.who(r, c), instance, "", "reason", reason)
}

// who names the principal behind r for the audit trail.
func (s *Server) who(r *http.Request, c caller) audit.Who {
	via := "http"
	if websocket.IsWebSocketUpgrade(r) {
		via = "websocket"
	}
	return audit.Who{Via: via, Name: c.id.Name, Remote: r.RemoteAddr}
}

func (m authMethod) String() string {
	switch m {
	case byBearer:
		return "bearer"
	case byCookie:
		return "cookie"
	case bySignin:
		return "oidc"
	}
	return "none"
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header; ok
// is false without the header, err is set for a malformed one.
func bearer(r *http.Request) (token string, ok bool, err error) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return "", false, nil
	}
	if len(vals) > 1 {
		return "", false, errors.New("more than one Authorization header")
	}
	scheme, token, found := strings.Cut(strings.TrimSpace(vals[0]), " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false, errors.New("the Authorization header must be \"Bearer TOKEN\"")
	}
	return token, true, nil
}

// queryHasToken reports a credential in the URL query, which is refused:
// a parameter named like one, in any case.
func queryHasToken(r *http.Request) bool {
	for k := range r.URL.Query() {
		switch strings.ToLower(k) {
		case "token", "access_token", "auth", "authorization", "api_token", "api_key", "apikey", "bearer":
			return true
		}
	}
	return false
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	s.log.Debug("unauthorized", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "reason", msg)
	w.Header().Set("WWW-Authenticate", `Bearer realm="termgate"`)
	writeError(w, http.StatusUnauthorized, msg)
}

func (s *Server) refuseOrigin(w http.ResponseWriter, r *http.Request, c caller, err error) {
	s.log.Warn("origin refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "reason", err.Error())
	s.auditFailure(r, c, r.PathValue("name"), err.Error())
	writeError(w, http.StatusForbidden, err.Error())
}
