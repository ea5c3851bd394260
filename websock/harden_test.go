package websock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve runs srv on a real loopback listener (the http.Server settings,
// unlike httptest's, apply there) and returns its address.
func serve(t *testing.T, srv *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

// A page, an API answer, an error, a refused handshake, a 429: each carries
// the security headers.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") })
		c.Page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<p>page</p>") })
	})
	c := e.login(tokAll)
	evil := withCookie(c, "https://evil.example")
	for _, tc := range []struct {
		method, path string
		h            http.Header
		status       int
	}{
		{"GET", "/", nil, 200},
		{"GET", "/assets/app.js", nil, 200},
		{"GET", "/healthz", nil, 200},
		{"GET", "/readyz", bearerHeader(tokAll), 200},
		{"GET", "/metrics", bearerHeader(tokAll), 200},
		{"GET", "/api/sessions", bearerHeader(tokAll), 200},
		{"GET", "/api/sessions", withCookie(c, ""), 200},
		{"GET", "/api/sessions", nil, 401},
		{"GET", "/api/sessions?token=x", nil, 401},
		{"GET", "/api/sessions", evil, 403},
		{"GET", "/api/nope", bearerHeader(tokAll), 404},
		{"DELETE", "/api/sessions", bearerHeader(tokAll), 405},
		{"POST", "/api/instances/web1/terminal/reset", bearerHeader(tokAll), 200},
		{"GET", termPath, bearerHeader(tokAll), 400}, // not an upgrade
		{"GET", termPath, evil, 403},
		{"POST", "/api/logout", withCookie(c, e.base), 204},
	} {
		resp := e.do(tc.method, tc.path, tc.h, nil)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %s, want %d", tc.method, tc.path, respText(resp), tc.status)
			continue
		}
		checkSecurityHeaders(t, tc.method+" "+tc.path, resp.Header)
	}
	// A refused WebSocket handshake.
	_, resp, err := e.dial(termPath, withCookie(c, "null"))
	if err == nil || resp == nil {
		t.Fatal("a null-origin handshake succeeded")
	}
	checkSecurityHeaders(t, "refused handshake", resp.Header)
}

func checkSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy":      ContentSecurityPolicy,
		"X-Content-Type-Options":       "nosniff",
		"Referrer-Policy":              "no-referrer",
		"X-Frame-Options":              "DENY",
		"Cache-Control":                "no-store",
		"Cross-Origin-Opener-Policy":   "same-origin",
		"Cross-Origin-Resource-Policy": "same-origin",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %s = %q, want %q", what, k, got, want)
		}
	}
	// No CORS: another origin's script may not read any answer.
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s: CORS header %s: %q", what, k, h.Get(k))
		}
	}
}

// The policy itself: no inline or eval'd script, no framing, no base or
// form target elsewhere; only styles may be inline (xterm.js).
func TestContentSecurityPolicy(t *testing.T) {
	dirs := map[string][]string{}
	for _, d := range strings.Split(ContentSecurityPolicy, ";") {
		f := strings.Fields(d)
		if len(f) == 0 {
			continue
		}
		if _, dup := dirs[f[0]]; dup {
			t.Errorf("directive %s twice", f[0])
		}
		dirs[f[0]] = f[1:]
	}
	for dir, want := range map[string]string{
		"default-src":     "'self'",
		"script-src":      "'self'",
		"style-src":       "'self' 'unsafe-inline'",
		"connect-src":     "'self'",
		"img-src":         "'self' data:",
		"object-src":      "'none'",
		"frame-ancestors": "'none'",
		"base-uri":        "'none'",
		"form-action":     "'self'",
	} {
		if got := strings.Join(dirs[dir], " "); got != want {
			t.Errorf("%s %q, want %q", dir, got, want)
		}
	}
	for dir, srcs := range dirs {
		for _, s := range srcs {
			if s == "'unsafe-eval'" || s == "*" || s == "http:" || s == "https:" || (s == "'unsafe-inline'" && dir != "style-src") {
				t.Errorf("%s allows %s", dir, s)
			}
		}
	}
}

// Credentials are never taken from the URL: a query parameter named like
// one, in any case, is refused on every route, the public ones included,
// even next to a valid header.
func TestTokenInURLRefusedEverywhere(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	// The page's sign-in link is the exception: the page is served (the
	// server never reads the token; the page's script trades it for the
	// cookie and removes it from the address bar).
	for _, path := range []string{"/?token=" + tokAll, "/t/web1?token=" + tokAll} {
		// (The placeholder page has no /t/ route: 404 there, not 401.)
		if resp := e.do("GET", path, nil, nil); resp.StatusCode == http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("GET %s: %s, want the page and no cookie", path, respText(resp))
		}
	}
	for _, path := range []string{
		"/healthz?access_token=" + tokAll,
		"/api/sessions?TOKEN=" + tokAll,
		"/api/sessions?Api_Key=" + tokAll,
		"/api/sessions?bearer=" + tokAll,
		"/metrics?authorization=Bearer+" + tokAll,
	} {
		resp := e.do("GET", path, bearerHeader(tokAll), nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s: %s, want 401", path, respText(resp))
		}
	}
	if resp := e.do("POST", "/api/login?token="+tokAll, nil, nil); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("login with the token in the query: %s", respText(resp))
	}
	e.refused(termPath+"?cols=80&rows=24&token="+tokAll, nil, http.StatusUnauthorized)
	if len(e.reg.Sessions()) != 0 {
		t.Fatal("a request with a token in the URL attached")
	}
}

// Bodies over MaxBodyBytes: 413 whether declared or streamed; nothing is
// logged in, and a body just under the limit works.
func TestRequestBodyLimit(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	const limit = 64 << 10
	if e.srv.cfg.MaxBodyBytes != limit {
		t.Fatalf("default MaxBodyBytes %d", e.srv.cfg.MaxBodyBytes)
	}
	form := func(n int) string { return "token=" + tokAll + "&pad=" + strings.Repeat("x", n) }
	h := formHeader.Clone()
	h.Set("Origin", e.base)

	resp := e.do("POST", "/api/login", h, strings.NewReader(form(limit)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || len(resp.Cookies()) != 0 {
		t.Errorf("declared oversized login: %s", respText(resp))
	}
	// Streamed (chunked, no Content-Length): read up to the limit, then 413.
	resp = e.do("POST", "/api/login", h, io.MultiReader(strings.NewReader(form(0)), &endless{}))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || len(resp.Cookies()) != 0 {
		t.Errorf("streamed endless login: %s", respText(resp))
	}
	resp = e.do("POST", "/api/instances/web1/terminal/reset", bearerHeader(tokAll), strings.NewReader(strings.Repeat("x", 1<<20)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized reset: %s", respText(resp))
	}
	if len(e.reg.Sessions()) != 0 {
		t.Error("an oversized reset ran")
	}
	resp = e.do("POST", "/api/login", h, strings.NewReader(form(limit-200)))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("login just under the limit: %s", respText(resp))
	}
}

// endless is a body that never ends.
type endless struct{}

func (*endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// Oversized headers get 431 from the server itself; a client that sends
// its headers too slowly is disconnected, and meanwhile others are served.
func TestHeaderLimits(t *testing.T) {
	be := newFakeBackend("web1")
	e := newEnv(t, be, nil, nil)
	srv, err := New(Config{Registry: e.reg, Tokens: testTokens, Logger: quietLog(), HeaderTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if srv.http.MaxHeaderBytes != 32<<10 || srv.http.ReadTimeout != 30*time.Second || srv.http.IdleTimeout != 30*time.Second {
		t.Fatalf("server limits: %d %v %v", srv.http.MaxHeaderBytes, srv.http.ReadTimeout, srv.http.IdleTimeout)
	}
	addr := serve(t, srv)
	client := &http.Client{Timeout: waitFor}

	req, _ := http.NewRequest("GET", "http://"+addr+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tokAll)
	req.Header.Set("X-Padding", strings.Repeat("x", 64<<10))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB of headers: %s, want 431", resp.Status)
	}
	// A long URL counts too.
	resp, err = client.Get("http://" + addr + "/healthz?x=" + strings.Repeat("x", 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB URL: %s, want 431", resp.Status)
	}

	// Slowloris: half a request line, then silence.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	start := time.Now()
	resp, err = client.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another client during the slow one: %v", err)
	}
	resp.Body.Close()
	_ = slow.SetReadDeadline(time.Now().Add(waitFor))
	rest, _ := io.ReadAll(bufio.NewReader(slow)) // ends when the server closes
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the slow client was dropped after %v (HeaderTimeout 300ms)", d)
	}
	if strings.Contains(string(rest), "200 OK") {
		t.Errorf("the slow client was answered: %q", rest)
	}
}

// A token limited to web* is limited the same way when a browser uses it
// through its login cookie: attach, reset and list.
func TestLimitedTokenThroughCookie(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1", "db1"), nil, nil)
	e.attach("/api/instances/db1/terminal")
	c := e.login(tokWeb)
	want := `instance "db1" not found or not running`
	if msg := e.refused("/api/instances/db1/terminal", withCookie(c, e.base), http.StatusNotFound); msg != want {
		t.Errorf("attach db1 by cookie: %q", msg)
	}
	resp := e.do("POST", "/api/instances/db1/terminal/reset", withCookie(c, e.base), nil)
	if resp.StatusCode != http.StatusNotFound || errorMessage(t, resp.Body) != want {
		t.Errorf("reset db1 by cookie: %d", resp.StatusCode)
	}
	if got := listInstances(t, e, withCookie(c, "")); got != "" {
		t.Errorf("webonly's cookie lists %q", got)
	}
	w, resp2, err := e.dial("/api/instances/web1/terminal", withCookie(c, e.base))
	if err != nil {
		t.Fatalf("attach web1 by cookie: %v (%s)", err, respText(resp2))
	}
	w.event("attached")
}
