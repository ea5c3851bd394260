package websock

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
)

// ContentSecurityPolicy is sent with every response. Scripts, styles,
// fonts, images and connections (fetch and WebSocket: 'self' covers ws:
// and wss: to the same host in Chrome 71+, Firefox and Safari 16+) come
// from the gateway only; no inline or eval'd script runs; nothing may frame
// the page; forms post only here.
//
// style-src allows 'unsafe-inline' because xterm.js (v5 and v6) creates
// <style> elements for its theme and cell dimensions and sets style
// attributes while rendering (xtermjs/xterm.js#4445): without it the
// terminal renders without colours or resizes wrongly. Inline styles cannot
// run code; with scripts, images, fonts and connections limited to 'self'
// they cannot send anything elsewhere either.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"connect-src 'self'; img-src 'self' data:; font-src 'self'; object-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// securityHeaders sets the headers every response gets. Handlers run after
// it and could replace them; Config.Page must not (see Config.Page).
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		// Every API answer is private and current; the page's handler may
		// set its own Cache-Control for static files.
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// limitRequests answers 429 to a client address over its request rate.
func (s *Server) limitRequests(h http.Handler) http.Handler {
	if s.requests == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, retry := s.requests.allow(clientKey(r.RemoteAddr)); !ok {
			s.log.Debug("request rate exceeded", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
			tooMany(w, retry, "too many requests from your address: slow down")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// limitBody refuses a declared body over MaxBodyBytes with 413 and caps
// what any handler can read of an undeclared (chunked) one.
func (s *Server) limitBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		max := s.cfg.MaxBodyBytes
		if isUpload(r) {
			max = s.cfg.MaxUploadSize
		}
		if r.ContentLength > max {
			writeError(w, http.StatusRequestEntityTooLarge, bodyTooLarge(max))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}

// isSignInPage reports a GET of the page's own routes, where a token in the
// query is a sign-in link for the page's script, not a credential the
// server uses.
func isSignInPage(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/t/")) &&
		!websocket.IsWebSocketUpgrade(r)
}

func bodyTooLarge(max int64) string {
	return fmt.Sprintf("request body too large (at most %d bytes)", max)
}

// refuseTokensInURL answers 401 to any request whose query carries a
// credential: a URL ends up in logs, proxies and browser history. The one
// exception is the browser page itself (GET / and /t/NAME): the server
// never reads the token there, the page exchanges it for the login cookie
// and removes it from the address bar at once (issue 4's sign-in link;
// the URL printed at start puts the token after # instead, which never
// reaches any server). The refusal is audited (without the token) but does
// not count towards the address's lockout: the token was not checked.
func (s *Server) refuseTokensInURL(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if queryHasToken(r) && !isSignInPage(r) {
			s.auditFailure(r, caller{}, "", "token in the URL query")
			s.unauthorized(w, r, errTokenInQuery.Error())
			return
		}
		h.ServeHTTP(w, r)
	})
}
