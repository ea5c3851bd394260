package websock

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/keys"
)

var formHeader = http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}

// login posts token as a form from the gateway's own origin and returns the
// cookie it got.
func (e *env) login(token string) *http.Cookie {
	e.t.Helper()
	h := formHeader.Clone()
	h.Set("Origin", e.base)
	resp := e.do("POST", "/api/login", h, strings.NewReader(url.Values{"token": {token}}.Encode()))
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("login: %s", respText(resp))
	}
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	e.t.Fatal("login set no cookie")
	return nil
}

func withCookie(c *http.Cookie, origin string) http.Header {
	h := http.Header{"Cookie": {c.Name + "=" + c.Value}}
	if origin != "" {
		h.Set("Origin", origin)
	}
	return h
}

func TestLoginCookie(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	c := e.login(tokAll)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Errorf("cookie attributes %+v (plain HTTP: not Secure)", c)
	}
	if strings.Contains(c.Value, tokAll) || len(c.Value) < 40 {
		t.Errorf("cookie value %q", c.Value)
	}
	if resp := e.do("GET", "/api/sessions", withCookie(c, ""), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("sessions with the cookie: %s", respText(resp))
	}
	// The header works too.
	h := bearerHeader(tokWeb)
	h.Set("Origin", e.base)
	resp := e.do("POST", "/api/login", h, nil)
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || resp.Cookies()[0].Value == c.Value {
		t.Fatalf("login by header: %s", respText(resp))
	}
	if resp := e.do("GET", "/api/sessions", withCookie(resp.Cookies()[0], ""), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("sessions with the header login's cookie: %s", respText(resp))
	}

	for _, tc := range []struct {
		name   string
		h      http.Header
		body   string
		path   string
		status int
	}{
		{name: "bad token", h: formHeader, body: "token=nope", status: 401},
		{name: "no token", h: formHeader, body: "", status: 401},
		{name: "token in query", h: formHeader, path: "?token=" + tokAll, status: 401},
		{name: "foreign origin", h: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"https://evil.example"}}, body: "token=" + tokAll, status: 403},
	} {
		resp := e.do("POST", "/api/login"+tc.path, tc.h, strings.NewReader(tc.body))
		if resp.StatusCode != tc.status || len(resp.Cookies()) != 0 {
			t.Errorf("%s: %s with %d cookies, want %d", tc.name, respText(resp), len(resp.Cookies()), tc.status)
		}
	}
}

func TestLoginCookieSecureOverTLS(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.PublicHosts = []string{"gw.example"} })
	r := httptest.NewRequest("POST", "https://gw.example/api/login", strings.NewReader("token="+tokAll))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, r)
	cs := w.Result().Cookies()
	if w.Code != http.StatusOK || len(cs) != 1 || !cs[0].Secure {
		t.Fatalf("login over TLS: %d %+v", w.Code, cs)
	}
}

// Cross-site WebSocket hijacking: a page on another origin opens a
// WebSocket to the gateway and the browser attaches the login cookie.
func TestCrossSiteWebSocketHijacking(t *testing.T) {
	const allowed = "https://term.example.com"
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.AllowedOrigins = []string{allowed} })
	c := e.login(tokAll)

	if msg := e.refused(termPath, withCookie(c, "https://evil.example"), http.StatusForbidden); !strings.Contains(msg, "origin not allowed") {
		t.Errorf("foreign origin: %q", msg)
	}
	e.refused(termPath, withCookie(c, ""), http.StatusForbidden)
	e.refused(termPath, withCookie(c, "null"), http.StatusForbidden)
	e.refused(termPath, withCookie(c, strings.Replace(e.base, "http:", "https:", 1)), http.StatusForbidden)
	// Look-alikes of the own origin: another port, a suffix, userinfo, a
	// path, two Origin headers.
	u, _ := url.Parse(e.base)
	for _, origin := range []string{
		"http://" + u.Hostname() + ":1",
		e.base + ".evil.example",
		"http://evil.example@" + u.Host,
		e.base + "/x",
		"http://localhost:" + u.Port(),
	} {
		e.refused(termPath, withCookie(c, origin), http.StatusForbidden)
	}
	two := withCookie(c, e.base)
	two.Add("Origin", "https://evil.example")
	e.refused(termPath, two, http.StatusForbidden)
	// A null Origin (sandboxed frame, file:, data: URL) with a token
	// header is refused too.
	hNull := bearerHeader(tokAll)
	hNull.Set("Origin", "null")
	e.refused(termPath, hNull, http.StatusForbidden)
	// A program with a token but a foreign Origin is refused too.
	h := bearerHeader(tokAll)
	h.Set("Origin", "https://evil.example")
	e.refused(termPath, h, http.StatusForbidden)
	if len(e.reg.Sessions()) != 0 {
		t.Fatal("a refused upgrade attached")
	}

	for _, origin := range []string{e.base, allowed} {
		w, resp, err := e.dial(termPath, withCookie(c, origin))
		if err != nil {
			t.Fatalf("cookie from %s: %v (%s)", origin, err, respText(resp))
		}
		w.event("attached")
		w.hangUp()
	}
	// A program with a token and no Origin is fine.
	w, resp, err := e.dial(termPath, bearerHeader(tokAll))
	if err != nil {
		t.Fatalf("bearer without origin: %v (%s)", err, respText(resp))
	}
	w.event("attached")
}

func TestCookiePOSTsCheckOrigin(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	c := e.login(tokAll)
	const reset = "/api/instances/web1/terminal/reset"
	for _, origin := range []string{"", "https://evil.example"} {
		if resp := e.do("POST", reset, withCookie(c, origin), nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("reset by cookie from %q: %s, want 403", origin, respText(resp))
		}
		if resp := e.do("POST", "/api/logout", withCookie(c, origin), nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("logout by cookie from %q: %s, want 403", origin, respText(resp))
		}
	}
	if len(e.reg.Sessions()) != 0 {
		t.Fatal("a refused reset started a session")
	}
	if resp := e.do("POST", reset, withCookie(c, e.base), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset by cookie from the own origin: %s", respText(resp))
	}
	// GETs need no Origin, but a foreign one is refused.
	if resp := e.do("GET", "/api/sessions", withCookie(c, ""), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("list by cookie: %s", respText(resp))
	}
	if resp := e.do("GET", "/api/sessions", withCookie(c, "https://evil.example"), nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("list by cookie from a foreign origin: %s", respText(resp))
	}

	resp := e.do("POST", "/api/logout", withCookie(c, e.base), nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %s", respText(resp))
	}
	if cs := resp.Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("logout did not clear the cookie: %+v", cs)
	}
	// The gateway keeps no logins: signing out clears the cookie in the
	// browser, and the value itself stays valid until it expires or its
	// token is removed (README, SECURITY.md).
	if resp := e.do("GET", "/api/sessions", withCookie(c, ""), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a copy of the cookie after logout: %s (stateless cookies: valid until expiry or revocation)", respText(resp))
	}
}

// revocable is a token checker whose tokens can be removed, as a reload
// of the token file does.
type revocable struct {
	mu     sync.Mutex
	tokens map[string]keys.Identity
}

func (r *revocable) Check(token string) (keys.Identity, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.tokens[token]
	return id, ok
}

func (r *revocable) CheckHash(tokenHash []byte) (keys.Identity, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fakeTokens(r.tokens).CheckHash(tokenHash)
}

func (r *revocable) remove(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tokens, token)
}

func TestRevokedTokenEndsLogins(t *testing.T) {
	var buf termtest.SyncBuffer
	tokens := &revocable{tokens: map[string]keys.Identity{tokAll: {Name: "alice", Kind: keys.KindToken, Grants: []keys.Grant{{}}}, tokWeb: {Name: "webonly", Kind: keys.KindToken, Grants: []keys.Grant{{}}}}}
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.Tokens = tokens; c.Audit = audit.New(&buf) })
	c := e.login(tokAll)
	other := e.login(tokWeb)
	tokens.remove(tokAll)
	resp := e.do("GET", "/api/sessions", withCookie(c, ""), nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("cookie of a revoked token: %s", respText(resp))
	}
	if msg := errorMessage(t, resp.Body); !strings.Contains(msg, "no longer valid") {
		t.Errorf("revoked: %q", msg)
	}
	e.refused(termPath, withCookie(c, e.base), http.StatusUnauthorized)
	if !strings.Contains(buf.String(), "the token of this login is no longer valid") {
		t.Errorf("the refusal is not audited:\n%s", buf.String())
	}
	// The logins of other tokens are untouched.
	if resp := e.do("GET", "/api/sessions", withCookie(other, ""), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("cookie of a token still there: %s", respText(resp))
	}
}

// The cookie is base64url(payload) "." base64url(HMAC-SHA256(key,
// payload)); the payload holds a version, the expiry and the token's
// identifier, never the token.
func TestLoginCookieFormat(t *testing.T) {
	key := bytes.Repeat([]byte{7}, CookieKeyLen)
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.CookieKey = key; c.LoginTTL = 3 * time.Hour })
	before := time.Now()
	c := e.login(tokAll)
	p64, m64, ok := strings.Cut(c.Value, ".")
	if !ok {
		t.Fatalf("cookie %q has no dot", c.Value)
	}
	payload, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil || len(payload) != 1+8+keys.TokenHashLen {
		t.Fatalf("payload %q: %x %v", p64, payload, err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	if got := m64; got != base64.RawURLEncoding.EncodeToString(m.Sum(nil)) {
		t.Errorf("MAC %q is not HMAC-SHA256(key, payload)", got)
	}
	if payload[0] != 1 {
		t.Errorf("version %d", payload[0])
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(payload[1:9])), 0)
	if exp.Before(before.Add(3*time.Hour-time.Second)) || exp.After(time.Now().Add(3*time.Hour)) {
		t.Errorf("expiry %v, want 3 h from now", exp)
	}
	if !bytes.Equal(payload[9:], keys.TokenHash(tokAll)) {
		t.Errorf("identifier %x, want keys.TokenHash of the token", payload[9:])
	}
	if c.MaxAge != 3*3600 || !c.Expires.Equal(exp) {
		t.Errorf("cookie Max-Age %d, Expires %v; want 10800 and %v", c.MaxAge, c.Expires, exp)
	}
}

// Logins survive a gateway restart that keeps the cookie key, and only
// then.
func TestLoginSurvivesRestartWithTheSameKey(t *testing.T) {
	key := bytes.Repeat([]byte{1}, CookieKeyLen)
	first := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.CookieKey = key })
	c := first.login(tokWeb)

	same := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.CookieKey = bytes.Clone(key) })
	if resp := same.do("GET", "/api/sessions", withCookie(c, ""), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("cookie after a restart with the same key: %s", respText(resp))
	}
	w, resp, err := same.dial(termPath, withCookie(c, same.base))
	if err != nil {
		t.Fatalf("attach with the cookie after a restart: %v (%s)", err, respText(resp))
	}
	w.event("attached")
	w.hangUp()

	for name, cfg := range map[string]func(*Config){
		"another key":       func(c *Config) { c.CookieKey = bytes.Repeat([]byte{2}, CookieKeyLen) },
		"an ephemeral key":  nil,
		"a longer same key": func(c *Config) { c.CookieKey = append(bytes.Clone(key), 1) },
	} {
		other := newEnv(t, newFakeBackend("web1"), nil, cfg)
		resp := other.do("GET", "/api/sessions", withCookie(c, ""), nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %s, want 401", name, respText(resp))
			continue
		}
		if msg := errorMessage(t, resp.Body); !strings.Contains(msg, "not signed by this gateway") {
			t.Errorf("%s: %q", name, msg)
		}
	}
}

// Forged, altered, expired and malformed cookies get 401, are audited, and
// cost the address nothing (the lock-out is set to one wrong token here).
func TestLoginCookieRefusals(t *testing.T) {
	var buf termtest.SyncBuffer
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.Audit = audit.New(&buf); c.AuthFailures = 1 })
	good := e.srv.cookies
	valid, _ := good.issue(keys.TokenHash(tokWeb))
	p64, m64, _ := strings.Cut(valid, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p64)
	b64 := base64.RawURLEncoding.EncodeToString
	// alter returns the payload with f applied, under the valid MAC.
	alter := func(f func(p []byte)) string {
		p := bytes.Clone(payload)
		f(p)
		return b64(p) + "." + m64
	}
	expired, _ := (&cookies{key: good.key, ttl: -time.Second, now: time.Now}).issue(keys.TokenHash(tokAll))
	justExpired, _ := (&cookies{key: good.key, ttl: 0, now: time.Now}).issue(keys.TokenHash(tokAll))
	wrongKey, _ := (&cookies{key: bytes.Repeat([]byte{9}, CookieKeyLen), ttl: time.Hour, now: time.Now}).issue(keys.TokenHash(tokAll))
	v2 := bytes.Clone(payload)
	v2[0] = 2
	unknown, _ := good.issue(keys.TokenHash("not-a-token-0123456789"))
	long := b64(append(bytes.Clone(payload), 0))
	short := b64(payload[:len(payload)-1])

	for _, tc := range []struct{ name, value, reason string }{
		{"another token's identifier", alter(func(p []byte) { copy(p[9:], keys.TokenHash(tokAll)) }), "not signed"},
		{"a later expiry", alter(func(p []byte) { p[1]++ }), "not signed"},
		{"one bit of the identifier", alter(func(p []byte) { p[len(p)-1] ^= 1 }), "not signed"},
		{"another MAC", p64 + "." + b64(make([]byte, sha256.Size)), "not signed"},
		{"signed with another key", wrongKey, "not signed"},
		{"expired", expired, "login expired"},
		{"expiring now", justExpired, "login expired"},
		{"an unknown version", good.seal(v2), "malformed"},
		{"a token never issued", unknown, "no longer valid"},
		{"a longer payload", long + "." + b64(good.mac(append(bytes.Clone(payload), 0))), "malformed"},
		{"a shorter payload", short + "." + b64(good.mac(payload[:len(payload)-1])), "malformed"},
		{"no MAC", p64, "malformed"},
		{"two dots", valid + ".x", "malformed"},
		{"standard base64", strings.NewReplacer("-", "+", "_", "/").Replace(valid) + "==", "malformed"},
		{"not base64", strings.Repeat("!", len(p64)) + "." + m64, "malformed"},
		{"the token", tokAll, "malformed"},
		{"empty", "", "malformed"},
	} {
		resp := e.do("GET", "/api/sessions", http.Header{"Cookie": {cookieName + "=" + tc.value}}, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %s, want 401", tc.name, respText(resp))
			continue
		}
		if msg := errorMessage(t, resp.Body); !strings.Contains(msg, tc.reason) {
			t.Errorf("%s: %q, want %q", tc.name, msg, tc.reason)
		}
	}
	if n := strings.Count(buf.String(), `"auth_failure"`); n < 16 {
		t.Errorf("%d refusals audited, want every one with a cookie:\n%s", n, buf.String())
	}
	if strings.Contains(buf.String(), "locked_out") {
		t.Error("a refused cookie spent the address's allowance")
	}
	// The valid one works, and so does a token: nothing was spent.
	if resp := e.do("GET", "/api/sessions", http.Header{"Cookie": {cookieName + "=" + valid}}, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the valid cookie: %s", respText(resp))
	}
	if resp := e.do("GET", "/api/sessions", bearerHeader(tokAll), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a token after the refused cookies: %s", respText(resp))
	}
}

func TestCookieExpiry(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := &cookies{key: newCookieKey(), ttl: time.Hour, now: func() time.Time { return now }}
	v, exp := c.issue(keys.TokenHash(tokAll))
	if !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("expires %v", exp)
	}
	now = now.Add(time.Hour - time.Second)
	if h, err := c.verify(v); err != nil || !bytes.Equal(h, keys.TokenHash(tokAll)) {
		t.Fatalf("a second before the expiry: %x %v", h, err)
	}
	now = now.Add(time.Second)
	if _, err := c.verify(v); !errors.Is(err, errCookieExpired) {
		t.Fatalf("at the expiry: %v", err)
	}
}
