package websock

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/termgate/termgate/audit"
)

// cookieName is the browser login cookie.
const cookieName = "termgate_login"

// logins maps login cookie values to the tokens they were exchanged for. The
// cookie value is random and opaque; the table is keyed by its SHA-256, so
// lookups take the same time whatever a guess shares with a real value.
// The token is kept (in memory only) so that every use checks it again:
// a token removed from the token file ends its logins too.
type logins struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu sync.Mutex // guards m
	m  map[[32]byte]login
}

type login struct {
	token   string
	expires time.Time
}

func newLogins(ttl time.Duration, max int, now func() time.Time) *logins {
	return &logins{ttl: ttl, max: max, now: now, m: map[[32]byte]login{}}
}

// add records a login for token and returns the cookie value.
func (l *logins) add(token string) (value string, expires time.Time) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	value = base64.RawURLEncoding.EncodeToString(b[:])
	now := l.now()
	expires = now.Add(l.ttl)

	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) >= l.max {
		l.evictLocked(now)
	}
	l.m[sha256.Sum256([]byte(value))] = login{token: token, expires: expires}
	return value, expires
}

// evictLocked drops expired logins, and the oldest one if none had expired.
func (l *logins) evictLocked(now time.Time) {
	var oldest [32]byte
	var oldestExp time.Time
	for k, v := range l.m {
		if !now.Before(v.expires) {
			delete(l.m, k)
			continue
		}
		if oldestExp.IsZero() || v.expires.Before(oldestExp) {
			oldest, oldestExp = k, v.expires
		}
	}
	if len(l.m) >= l.max {
		delete(l.m, oldest)
	}
}

// token returns the token behind a cookie value that has not expired.
func (l *logins) token(value string) (string, bool) {
	k := sha256.Sum256([]byte(value))
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.m[k]
	if !ok {
		return "", false
	}
	if !l.now().Before(in.expires) {
		delete(l.m, k)
		return "", false
	}
	return in.token, true
}

func (l *logins) remove(value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, sha256.Sum256([]byte(value)))
}

// handleLogin exchanges a valid token (Authorization header or form field
// "token") for a login cookie. Like every credential check it is refused
// from a foreign Origin before the token is looked at, answered 429 from a
// locked-out address, and audited.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if err := s.origins.check(r, false); err != nil {
		s.refuseOrigin(w, r, caller{}, err)
		return
	}
	token, ok, err := bearer(r)
	if err == nil && !ok {
		if perr := r.ParseForm(); perr != nil {
			if tooBig := (*http.MaxBytesError)(nil); errors.As(perr, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, bodyTooLarge(tooBig.Limit))
				return
			}
			writeError(w, http.StatusBadRequest, "malformed form body")
			return
		}
		token = r.PostForm.Get("token")
		if token == "" {
			s.unauthorized(w, r, "no token: send it as the form field \"token\" or in an Authorization: Bearer header")
			return
		}
	}
	if err != nil {
		s.credentialRefused(w, r, err.Error())
		return
	}
	if s.lockedOut(w, r) {
		return
	}
	id, ok := s.cfg.Tokens.Check(token)
	if !ok {
		s.authFailed(w, r, "invalid token")
		return
	}
	value, expires := s.logins.add(token)
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    value,
		Path:     "/",
		Expires:  expires,
		MaxAge:   int(s.cfg.LoginTTL / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	s.log.Info("browser login", "remote", r.RemoteAddr, "identity", id.Name)
	s.cfg.Audit.Event(audit.AuthSuccess, s.who(r, caller{id: id}), "", "", "method", "login")
	writeJSON(w, http.StatusOK, map[string]string{"name": id.Name})
}

// handleLogout forgets the login cookie. A request carrying the cookie must
// come from an allowed origin, like any cookie-authenticated POST.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	c, cookieErr := r.Cookie(cookieName)
	hasCookie := cookieErr == nil
	if err := s.origins.check(r, hasCookie); err != nil {
		s.refuseOrigin(w, r, caller{}, err)
		return
	}
	if hasCookie {
		s.logins.remove(c.Value)
	}
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	w.WriteHeader(http.StatusNoContent)
}
