package websock

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
)

// cookieName is the browser login cookie.
const cookieName = "termgate_login"

// CookieKeyLen is the length of Config.CookieKey (the least accepted; New
// generates one this long when none is given).
const CookieKeyLen = 32

// A login cookie is stateless: the gateway keeps no table of logins, so
// they survive a restart (with the same key), and it never holds a token.
// Its value is base64url(payload) "." base64url(HMAC-SHA256(key, payload)),
// unpadded, where payload is
//
//	version (1 byte, 1) | expiry, Unix seconds (8 bytes, big endian) |
//	keys.TokenHash of the token (16 bytes)
//
// Every use checks the MAC, then the expiry, then looks the token up by its
// identifier in the current token file: removing a token ends its logins.
// Nothing can invalidate one value earlier: a copied cookie stays good until
// it expires or its token is removed (or the key changes).
const (
	cookieVersion    = 1
	cookiePayloadLen = 1 + 8 + keys.TokenHashLen
)

var cookieB64 = base64.RawURLEncoding.Strict()

// Reasons a login cookie is refused (audited; answered with 401).
var (
	errCookieMalformed = errors.New("malformed login cookie: log in again")
	errCookieSignature = errors.New("login cookie not signed by this gateway (its cookie key changed?): log in again")
	errCookieExpired   = errors.New("login expired: log in again")
)

// cookies signs and verifies login cookie values.
type cookies struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// newCookieKey returns CookieKeyLen random bytes.
func newCookieKey() []byte {
	key := make([]byte, CookieKeyLen)
	_, _ = rand.Read(key) // crypto/rand.Read never returns an error
	return key
}

// issue returns a cookie value for the token with identifier tokenHash,
// valid for the TTL.
func (c *cookies) issue(tokenHash []byte) (value string, expires time.Time) {
	expires = c.now().Add(c.ttl).Truncate(time.Second)
	payload := make([]byte, 0, cookiePayloadLen)
	payload = append(payload, cookieVersion)
	payload = binary.BigEndian.AppendUint64(payload, uint64(expires.Unix()))
	payload = append(payload, tokenHash...)
	return c.seal(payload), expires
}

// seal signs payload: base64url(payload) "." base64url(MAC).
func (c *cookies) seal(payload []byte) string {
	return cookieB64.EncodeToString(payload) + "." + cookieB64.EncodeToString(c.mac(payload))
}

func (c *cookies) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(payload)
	return m.Sum(nil)
}

// verify checks a cookie value's MAC and expiry and returns the token
// identifier it carries. The MAC is checked before anything in the payload
// is believed.
func (c *cookies) verify(value string) ([]byte, error) {
	p64, m64, ok := strings.Cut(value, ".")
	if !ok || len(p64) != cookieB64.EncodedLen(cookiePayloadLen) || len(m64) != cookieB64.EncodedLen(sha256.Size) {
		return nil, errCookieMalformed
	}
	payload, err1 := cookieB64.DecodeString(p64)
	mac, err2 := cookieB64.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return nil, errCookieMalformed
	}
	if !hmac.Equal(mac, c.mac(payload)) {
		return nil, errCookieSignature
	}
	if payload[0] != cookieVersion {
		return nil, errCookieMalformed
	}
	expires := time.Unix(int64(binary.BigEndian.Uint64(payload[1:9])), 0)
	if !c.now().Before(expires) {
		return nil, errCookieExpired
	}
	return payload[9:], nil
}

// handleLogin exchanges a valid token (Authorization header or form field
// "token") for a login cookie. Like every credential check it is refused
// from a foreign Origin before the token is looked at, answered 429 from a
// locked-out address, and audited.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if err := s.hosts.check(r); err != nil {
		s.refuseHost(w, r, err)
		return
	}
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
	value, expires := s.cookies.issue(keys.TokenHash(token))
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
	s.log.Info("signed in", "via", "web", "who", id.Name)
	s.cfg.Audit.Event(audit.AuthSuccess, s.who(r, caller{id: id}), "", "", "method", "login")
	writeJSON(w, http.StatusOK, map[string]string{"name": id.Name})
}

// handleLogout clears the login cookie in the browser (Max-Age 0). The
// gateway keeps no logins to forget: the value itself stays valid until it
// expires or its token is removed (see cookies). A request carrying the
// cookie must come from an allowed origin, like any cookie-authenticated
// POST, so another site cannot sign a user out.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	_, cookieErr := r.Cookie(cookieName)
	sc, signinErr := r.Cookie(oidcCookie)
	if err := s.origins.check(r, cookieErr == nil || signinErr == nil); err != nil {
		s.refuseOrigin(w, r, caller{}, err)
		return
	}
	if signinErr == nil {
		// A sign-in is forgotten here (until it would have expired), and
		// the clients it attached are cut within a second (watchSignins).
		var si signin
		if s.cookies.openJSON(oidcCookie, sc.Value, &si) == nil && si.ID != "" {
			s.signins.revoke(si.ID, si.Expires)
			s.log.Info("signed out", "via", "web", "who", si.Email)
			s.cfg.Audit.Event(audit.Detach, audit.Who{Via: "oidc", Name: si.Email, Remote: r.RemoteAddr}, "", "", "reason", "logout")
		}
		http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
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
