package websock

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

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
	// The header works too, and two logins get two cookies.
	h := bearerHeader(tokAll)
	h.Set("Origin", e.base)
	resp := e.do("POST", "/api/login", h, nil)
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || resp.Cookies()[0].Value == c.Value {
		t.Fatalf("login by header: %s", respText(resp))
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
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
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
	if resp := e.do("GET", "/api/sessions", withCookie(c, ""), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("cookie after logout: %s", respText(resp))
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

func TestRevokedTokenEndsLogins(t *testing.T) {
	tokens := &revocable{tokens: map[string]keys.Identity{tokAll: {Name: "alice"}}}
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.Tokens = tokens })
	c := e.login(tokAll)
	tokens.mu.Lock()
	delete(tokens.tokens, tokAll)
	tokens.mu.Unlock()
	if resp := e.do("GET", "/api/sessions", withCookie(c, ""), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("cookie of a revoked token: %s", respText(resp))
	}
}

func TestLoginsExpireAndStayBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLogins(time.Hour, 3, func() time.Time { return now })
	a, _ := l.add("tok-a")
	if tok, ok := l.token(a); !ok || tok != "tok-a" {
		t.Fatalf("fresh login: %q %v", tok, ok)
	}
	if _, ok := l.token("made-up"); ok {
		t.Fatal("unknown value accepted")
	}
	now = now.Add(time.Hour)
	if _, ok := l.token(a); ok {
		t.Fatal("expired login accepted")
	}

	var vals []string
	for i := range 5 {
		now = now.Add(time.Minute)
		v, _ := l.add("tok-" + string(rune('0'+i)))
		vals = append(vals, v)
	}
	if len(l.m) > 3 {
		t.Fatalf("%d logins kept, bound is 3", len(l.m))
	}
	for i, v := range vals {
		_, ok := l.token(v)
		if want := i >= 2; ok != want { // the oldest went first
			t.Errorf("login %d kept=%v, want %v", i, ok, want)
		}
	}
	l.remove(vals[4])
	if _, ok := l.token(vals[4]); ok {
		t.Fatal("removed login accepted")
	}
}
