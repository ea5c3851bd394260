// Package websock is termgate's HTTP and WebSocket listener: the browser
// terminal and the JSON API over the shared sessions.Registry.
//
// # Routes
//
//	GET  /api/instances/{name}/terminal        WebSocket attach
//	POST /api/instances/{name}/terminal/reset  reset the instance's session
//	GET  /api/sessions                         the sessions the caller may see
//	GET  /api/instances                        the running instances the caller may reach, with their sessions
//	GET  /api/whoami                           who the credential belongs to (name, instances=)
//	POST /api/login · POST /api/logout         token ↔ browser cookie
//	GET  /healthz · /readyz · /metrics         liveness · backend · Prometheus (metrics: unlimited tokens only)
//	GET  /                                     the browser terminal (Config.Page)
//
// # Authentication
//
// Every route but /healthz and the page needs a credential: the header
// "Authorization: Bearer TOKEN", or the cookie that POST /api/login hands
// out in exchange for a token. The gateway keeps no logins: the cookie is
// base64url(payload) "." base64url(HMAC-SHA256(Config.CookieKey, payload)),
// the payload holding a version, the expiry (Config.LoginTTL, 12 h) and
// keys.TokenHash of the token (16 bytes of its SHA-256, never the token).
// Every use checks the MAC (hmac.Equal), then the expiry, then looks the
// identifier up in the current token file (TokenChecker.CheckHash): removing
// a token from the file ends its browser logins, and logins survive a
// gateway restart that keeps the key (cmd/termgate keeps it in
// <state-dir>/cookie_key). The trade-off: POST /api/logout only clears the
// cookie in the browser (Max-Age 0); a copy of the value stays valid until
// it expires or its token is removed (or the key is replaced, which ends
// every login).
//
// Tokens are never logged (nor written to the audit trail) and never
// accepted in the URL: a request whose query has a parameter named like a
// credential (token, access_token, …, in any case) is refused with 401 on
// every route, the page's included. The browser URL the gateway prints
// carries a new token after # (a fragment is never sent to a server); the
// page posts it to /api/login.
//
// The page itself is public: it holds no data, and a browser must be able to
// load it before it has a cookie.
//
// # Limits
//
// Per client address (the connection's IPv4 address, or its IPv6 /64;
// X-Forwarded-For is never read): a token bucket of requests (Config.
// RequestRate, RequestBurst: 20/s, bursts of 100; then 429 with
// Retry-After), and one of wrong tokens (AuthFailures, AuthFailureEvery: 10,
// one more every 30 s), after which every token from that address gets 429
// without being checked. Malformed headers and stale, altered or foreign
// cookies are refused but cost nothing (a cookie cannot be guessed: it is
// MACed with a 256-bit key), and a valid login cookie works from a
// locked-out address. A foreign Origin is refused before any credential is looked at,
// so a page on another site cannot spend its visitor's allowance. Both
// tables are bounded. Bodies over 64 KiB get 413, request lines and headers
// over 32 KiB 431; headers must arrive within 10 s, a whole request within
// 30 s.
//
// # Headers
//
// Every response, the page's and the errors included, carries
// ContentSecurityPolicy (no inline or eval'd script; inline styles for
// xterm.js), X-Content-Type-Options nosniff, Referrer-Policy no-referrer,
// X-Frame-Options DENY, Cross-Origin-Opener-Policy and
// Cross-Origin-Resource-Policy same-origin, and Cache-Control no-store
// (the page's handler may relax caching for its static files). No CORS
// header is ever sent.
//
// # TLS and audit
//
// With Config.TLS, Serve speaks HTTPS only: TLS 1.2 or later, HTTP/1.1 (no
// HTTP/2: WebSocket upgrades need HTTP/1.1), login cookies Secure;
// CertFiles reloads a PEM pair. Config.Audit gets an event for every wrong
// or refused credential (with the reason; locked_out on the failure that
// used up an address's allowance), refused Origin, token in the URL and
// forbidden instance; for every successful login, WebSocket authentication
// and reset authentication; and for every attach, detach and reset (HTTP
// POST or control message). Events name the token (its name in the token
// file), never its value.
//
// # Origin checks
//
// Browsers attach cookies to cross-site WebSocket handshakes and there is no
// CORS preflight for them, so: a request that carries an Origin header must
// name the request's own origin (scheme and host) or one of
// Config.AllowedOrigins, and a cookie-authenticated WebSocket upgrade or POST
// must carry one. A program using a bearer token without an Origin header
// passes.
//
// A credential that may not use an instance gets the same 404 as an unknown
// instance, on every route, so instance names do not leak.
//
// # WebSocket protocol
//
// Before upgrading, the handler checks the name (400), the permission (404)
// and the query's cols and rows (1..1000 each, or both absent: 400
// otherwise), then attaches (404 for an unknown instance, 503 when the
// gateway is shutting down or the backend fails) and only then upgrades.
//
// The server sends a text {"type":"attached",...} event first, then binary
// frames of output: the replay, then live output. Later text events are
// {"type":"reset","session":NEW,"offset":N} (the client was moved to a fresh
// session: its replay and output follow as binary frames; offset is the
// number of the first byte after that replay), {"type":"exit","code":N} (the
// shell exited; the connection then closes with 1000) and
// {"type":"error","message":...}: either a refused control message or a
// notice (a reset over its rate limit, input dropped while the shell does
// not read it; the connection stays up) or the reason the connection ends
// (it then closes with 1000; 1001 when the gateway shuts down; 1012
// "service restart" when it shuts down leaving a durable session running,
// see restart.go; 1008 when the token was revoked, see Registry.Recheck;
// 1013 when the client fell too far behind the output).
//
// The client sends input as binary frames and control messages as text
// frames: {"type":"resize","cols":N,"rows":M} and {"type":"reset"}. A
// message over 1 MiB closes the connection with 1009.
//
// Observers (issue 12): a read-only token attaches with
// sessions.AttachOptions.ReadOnly and its attached event says
// "read_only":true (so does GET /api/whoami). Its binary frames are
// dropped in the read loop, the first one answered with an error event
// (once per connection); its resize messages are accepted and never
// applied; its reset control message gets an error event and POST reset
// 403, both before the reset rate limits. Who, Via ("websocket") and
// Remote go into the attach (and stay with it when a reset moves it), so GET
// /api/sessions' attached array names the connection. A connection opened
// with ?clients=1 also gets {"type":"clients","attached":[...]} after its
// attached event and at every attach or leave in its session (clients.go).
//
// Each connection has four goroutines, and a fifth while a control reset
// runs: the handler's, which owns the read loop and never blocks on the
// shell; one writer, the only goroutine that writes data frames, fed through
// a channel by the output pump, the read loop and the input writer; the
// output pump, which reads the sessions.Client and reports resets; and the
// input writer, the only caller of Client.Write. Every write has a 10 s
// deadline (2 s once the connection is ending because the client is too
// slow or revoked), pings go out every 25 s, and a peer that answers
// nothing for 60 s is dropped. Server.Shutdown ends every connection with
// an error event and waits for all of its goroutines. Serve caps the
// connections per client address and in total (Config.MaxConnsPerAddr,
// MaxConns).
//
// Locks: Server.mu (the connection set) and conn.mu (the current attach)
// are never held together, nor across network or backend I/O.
package websock
