// Package websock is termgate's HTTP and WebSocket listener: the browser
// terminal and the JSON API over the shared sessions.Registry.
//
// # Routes
//
//	GET  /api/instances/{name}/terminal        WebSocket attach
//	POST /api/instances/{name}/terminal/reset  reset the instance's session
//	GET  /api/sessions                         the sessions the caller may see
//	POST /api/login · POST /api/logout         token ↔ browser cookie
//	GET  /healthz · /readyz · /metrics         liveness · backend · Prometheus
//	GET  /                                     the browser terminal (Config.Page)
//
// # Authentication
//
// Every route but /healthz and the page needs a credential: the header
// "Authorization: Bearer TOKEN", or the cookie that POST /api/login hands
// out in exchange for a token. The cookie holds a random opaque value that
// maps, in a bounded server-side table with an expiry, to the token it was
// made from; the token is checked again on every use, so removing it from
// the token file also ends its browser logins. Tokens are never logged and
// never accepted in the URL query (a request that carries one there is
// refused with 401, whatever else it carries).
//
// The page itself is public: it holds no data, and a browser must be able to
// load it before it has a cookie.
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
// {"type":"error","message":...}: either a refused control message (the
// connection stays up) or the reason the connection ends (it then closes
// with 1000, or 1001 when the gateway shuts down).
//
// The client sends input as binary frames and control messages as text
// frames: {"type":"resize","cols":N,"rows":M} and {"type":"reset"}. A
// message over 1 MiB closes the connection with 1009.
//
// Each connection has three goroutines: the handler's, which owns the read
// loop; one writer, the only goroutine that writes data frames, fed through
// a channel by the output pump and the read loop; and the output pump, which
// reads the sessions.Client and follows resets. Every write has a 10 s
// deadline, pings go out every 25 s, and a peer that answers nothing for 60 s
// is dropped. Server.Shutdown ends every connection with an error event and
// waits for all of its goroutines.
//
// Locks: Server.mu (the connection set) and conn.mu (the current attach)
// are never held together, nor across network or backend I/O.
package websock
