// Package websock is termgate's HTTP and WebSocket listener: the browser
// terminal, the JSON API and the WebSocket attach, over the shared
// sessions.Registry. New (server.go) takes a Config whose defaults are
// config.go's; the routes are registered in server.go (routes); what
// each answers, the WebSocket events and the close codes are in README.md
// ("HTTP and WebSocket"), and the promises against attackers (credentials,
// limits, headers, Origin, TLS) with their tests in SECURITY.md.
//
// Every route but /healthz and the page goes through Server.authed (auth.go):
// a bearer token or the login cookie (login.go: an HMAC over the token's
// hash and an expiry, so the gateway keeps no logins), the per-address
// limits (limits.go), the Origin check (origin.go) and the one access
// decision (keys.Identity.On, per request; api.go decide), which answers
// like an unknown instance for one it may not use. Serve caps the
// connections per client address and in total (connlimit.go). Config.Audit
// gets every authentication, refusal, attach, detach, reset and recording
// served (audit_test.go lists them).
//
// A WebSocket is attached before it is upgraded (terminal.go), so a refusal
// is a plain HTTP status. The connection (conn.go) then has these
// goroutines, each ended and waited for by run before the handler returns:
//
//   - the handler's own, which runs the read loop (binary frames are input,
//     text frames control messages: control.go) and never blocks on the
//     shell;
//   - writeLoop, the only goroutine that writes data frames: it takes the
//     session's output and in-band events from the sessions.Client itself
//     (sessions moves the client on a reset; connEvents, inband.go, sends
//     each kind's frame) and the events the others hand it through conn.out;
//   - inputLoop (input.go), the only caller of Client.Write, fed by the
//     read loop; input a shell does not take within the registry's
//     InputTimeout is dropped with one error event;
//   - runResets, at most one at a time, while a control reset runs;
//   - watchClients (clients.go), only with ?clients=1;
//   - watchCut's callback, only once the client is closed, which cuts a
//     write blocked on a client that fell behind or was revoked;
//   - the behind watch's callback (behind.go), only when an output write
//     is not taken within the write timeout: it drops the client as
//     fallen behind.
//
// Writes have a 10 s deadline (2 s once the connection is ending), pings go
// out every 25 s, and a peer silent for 60 s is dropped. A client that
// falls behind (its queue overflows, or it takes no output for 10 s) gets
// 5 s more to take the frame in flight, then the error event and close
// 1013, so that a client that reads again learns why (behind.go). Server.Shutdown
// ends every connection with an error event (close 1012 when a durable
// session keeps running, restart.go) and waits for all of its goroutines.
// With single sign-on (oidc.go, signin.go) the Server owns one more,
// watchSignins, which rechecks the registry when a sign-in that attached
// clients logs out or expires; Shutdown stops it and waits.
//
// Locks: Server.mu (the connection set) and conn.mu (the current attach)
// are never held together, nor across network or backend I/O; the
// limiters' mutexes (limits.go, resetlimit.go, connlimit.go) and
// signins.mu guard only their own tables.
package websock
