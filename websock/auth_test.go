package websock

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
)

func TestHealthzNeedsNoAuth(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	resp := e.do("GET", "/healthz", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %s", respText(resp))
	}
}

func TestAuthRequired(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") })
	})
	routes := []struct{ method, path string }{
		{"GET", "/api/sessions"},
		{"POST", "/api/instances/web1/terminal/reset"},
		{"GET", "/readyz"},
		{"GET", "/metrics"},
		{"GET", "/api/whoami"},
	}
	refusals := []struct {
		name string
		path string // appended to the route's path
		h    http.Header
	}{
		{name: "no credential"},
		{name: "wrong token", h: bearerHeader("wrong-token")},
		{name: "not bearer", h: http.Header{"Authorization": {"Basic " + tokAll}}},
		{name: "empty bearer", h: http.Header{"Authorization": {"Bearer "}}},
		{name: "token in query", path: "?token=" + tokAll},
		{name: "token in query with a header", path: "?access_token=" + tokAll, h: bearerHeader(tokAll)},
		{name: "unknown cookie", h: http.Header{"Cookie": {cookieName + "=made-up"}}},
		{name: "token as cookie", h: http.Header{"Cookie": {cookieName + "=" + tokAll}}},
	}
	for _, rf := range refusals {
		e.refused(termPath+rf.path, rf.h, http.StatusUnauthorized)
	}
	if len(e.reg.Sessions()) != 0 {
		t.Fatal("a refused attach started a session")
	}
	for _, rt := range routes {
		for _, rf := range refusals {
			resp := e.do(rt.method, rt.path+rf.path, rf.h, nil)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s, %s: %s, want 401", rt.method, rt.path, rf.name, respText(resp))
				continue
			}
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s, %s: no WWW-Authenticate", rt.method, rt.path, rf.name)
			}
		}
		if resp := e.do(rt.method, rt.path, bearerHeader(tokAll), nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s with a token: %s", rt.method, rt.path, respText(resp))
		}
	}
}

func TestMetricsAndPage(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	if resp := e.do("GET", "/metrics", bearerHeader(tokAll), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("metrics without a handler: %s, want 404", respText(resp))
	}
	resp := e.do("GET", "/", nil, nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "termgate") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("placeholder page: %d %q", resp.StatusCode, body)
	}
	if resp := e.do("GET", "/nope", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %s", respText(resp))
	}
	if resp := e.do("GET", "/api/nope", bearerHeader(tokAll), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /api/nope: %s", respText(resp))
	}
	if resp := e.do("DELETE", "/api/sessions", bearerHeader(tokAll), nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /api/sessions: %s", respText(resp))
	}

	e2 := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) {
		c.Page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page "+r.URL.Path) })
	})
	resp = e2.do("GET", "/app.js", nil, nil)
	body, _ = io.ReadAll(resp.Body)
	if string(body) != "page /app.js" {
		t.Errorf("custom page: %q", body)
	}
}

// Neither the log (at debug level) nor the audit trail ever holds a token:
// not a valid one, not a wrong one (tokAll+"x" contains tokAll), not one
// in the URL, a form, a malformed header, a login cookie or its value.
func TestTokensNeverLogged(t *testing.T) {
	var logs, trail termtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) {
		c.Logger = log
		c.Audit = audit.New(&trail)
		c.AuthFailures = 2 // the lock-out's log line too
	})
	// What succeeds first, then what fails, up to the lock-out.
	e.do("GET", "/api/sessions", bearerHeader(tokAll), nil)
	c := e.login(tokWeb)
	w, _ := e.attach(termPath)
	w.control(`{"type":"reset"}`)
	w.event("reset")
	w.hangUp()
	e.waitClients("web1", 0)
	e.do("GET", "/api/sessions?token="+tokAll, nil, nil)
	e.refused(termPath+"?token="+tokAll, nil, http.StatusUnauthorized)
	e.refused(termPath, withCookie(c, "https://evil.example"), http.StatusForbidden)
	e.do("GET", "/api/sessions", bearerHeader(tokAll+"x"), nil)
	e.do("GET", "/api/sessions", http.Header{"Authorization": {"Token " + tokAll}}, nil)
	e.do("GET", "/api/sessions", http.Header{"Cookie": {cookieName + "=" + tokAll}}, nil)
	e.do("POST", "/api/login", formHeader, strings.NewReader("token="+tokWeb+"x"))
	e.do("GET", "/api/sessions", http.Header{"Authorization": {"Bearer " + tokAll, "Bearer " + tokWeb}}, nil)
	for name, out := range map[string]string{"log": logs.String(), "audit trail": trail.String()} {
		if strings.Contains(out, tokAll) || strings.Contains(out, tokWeb) || strings.Contains(out, c.Value) || out == "" {
			t.Fatalf("the %s (%d bytes) holds a token or a cookie, or nothing:\n%s", name, len(out), out)
		}
	}
	if !strings.Contains(trail.String(), `"locked_out":true`) {
		t.Error("the test did not reach the lock-out")
	}
}
