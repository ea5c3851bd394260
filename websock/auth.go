package websock

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/termgate/termgate/keys"
)

// TokenChecker checks an HTTP bearer token (keys.TokenStore satisfies it).
type TokenChecker interface {
	Check(token string) (keys.Identity, bool)
}

var errTokenInQuery = errors.New("tokens are not accepted in the URL (they end up in logs and browser history): send an Authorization: Bearer header, or log in at POST /api/login")

// authMethod says how a request proved who it is.
type authMethod int

const (
	byBearer authMethod = iota + 1
	byCookie
)

// caller is an authenticated request's identity.
type caller struct {
	id     keys.Identity
	method authMethod
}

type callerKey struct{}

// callerFrom returns the caller that authed stored in the request context.
func callerFrom(ctx context.Context) (caller, bool) {
	c, ok := ctx.Value(callerKey{}).(caller)
	return c, ok
}

// authed wraps h with authentication and the Origin rules: 401 without a
// valid credential, 403 for a refused Origin. strictOrigin marks routes
// where a cookie alone is not enough (WebSocket upgrades and POSTs): there
// a cookie-authenticated request must carry an allowed Origin.
func (s *Server) authed(strictOrigin bool, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		if err := s.origins.check(r, strictOrigin && c.method == byCookie); err != nil {
			s.refuseOrigin(w, r, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// authenticate finds the request's credential, or answers 401. A bearer
// header wins over the cookie; a bad one is refused even with a good cookie.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (caller, bool) {
	if queryHasToken(r) {
		s.unauthorized(w, r, errTokenInQuery.Error())
		return caller{}, false
	}
	token, ok, err := bearer(r)
	if err != nil {
		s.unauthorized(w, r, err.Error())
		return caller{}, false
	}
	if ok {
		id, ok := s.cfg.Tokens.Check(token)
		if !ok {
			s.unauthorized(w, r, "invalid token")
			return caller{}, false
		}
		return caller{id: id, method: byBearer}, true
	}
	if ck, err := r.Cookie(cookieName); err == nil {
		token, ok := s.logins.token(ck.Value)
		if !ok {
			s.unauthorized(w, r, "login expired or unknown: log in again")
			return caller{}, false
		}
		id, ok := s.cfg.Tokens.Check(token)
		if !ok {
			s.logins.remove(ck.Value)
			s.unauthorized(w, r, "the token of this login is no longer valid: log in again")
			return caller{}, false
		}
		return caller{id: id, method: byCookie}, true
	}
	s.unauthorized(w, r, "authentication required: send an Authorization: Bearer header, or log in at POST /api/login")
	return caller{}, false
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

// queryHasToken reports a credential in the URL query, which is refused.
func queryHasToken(r *http.Request) bool {
	q := r.URL.Query()
	for _, k := range []string{"token", "access_token", "auth", "authorization", "api_token"} {
		if q.Has(k) {
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

func (s *Server) refuseOrigin(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Warn("origin refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "reason", err.Error())
	writeError(w, http.StatusForbidden, err.Error())
}
