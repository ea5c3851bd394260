// Package sshd is termgate's SSH listener: `ssh -t web1@gateway` attaches
// to the persistent session of instance web1 through the shared
// sessions.Registry; `reset`, `list` and `help` manage sessions. What it
// refuses, its limits and its exit statuses are the README's "Security
// model" and SECURITY.md; the code says where each is enforced.
//
// It serves on golang.org/x/crypto/ssh directly, not on gliderlabs/ssh or
// a fork of it: termgate already did the channel work itself (the inbox
// pump, raw output, the request filter, window changes that never block
// the request loop, its own connection table and handshake deadline), so
// the library only stood in the way. Here a connection is a loop over its
// channels, dispatched by type (Server.channels: "session" only; another
// type, such as direct-tcpip, is one more opener), and a session channel is
// a loop over its requests, dispatched by type (sessionRequests: a
// subsystem or another command kind is one more handler). Once a shell or
// exec request is granted, the middleware chain runs, in wish's shape:
//
//	recover → logging → auth → route (attach, reset, list, help)
//
// Goroutines, all counted by the tracker (track.go) that Shutdown and
// Close wait for: per connection, serveConn (handshake, then the channel
// loop), keepalive (plus one per keepalive in flight) and the global
// request drain; per session channel, its request loop, the inbox pump
// (inbox.go; once attached it writes input to the session itself), the
// stderr drain and the handler. An attach adds the relay's channel
// watcher, the window follower with a PTY (windowWatch.follow) and the
// certificate-expiry timer; the write guard's watcher starts only once the
// client is closed, the input retry goroutine only after a stall. The
// output is written by the handler's goroutine (relay.output), with no
// goroutine or copy between the session's queue and the channel; the same
// goroutine shows in-band events (relayEvents, events.go). A
// browser sign-in (signin.go) waits in the handshake's own goroutine,
// bounded by SignIn.Wait and ended by the connection's context, which
// Shutdown cancels for connections not yet authenticated.
//
// Locks: Server.mu, then connState.mu, then limits.mu; relay.mu before the
// sessions locks. windowWatch.mu, inbox.mu, inputWriter.mu, writeGuard.mu
// and tracker.mu are leaves. None is held across I/O or a call out (the
// pump lets go of inbox.mu before it hands input to the session).
//
// It logs through Config.Logger only, with the connection's attributes
// (conn, remote) and the session's (user, key, command, identity); what the
// user reads is written for the user, the detail goes to the log. With
// Config.Audit set it writes the authentication, attach, detach and reset
// events of the audit trail.
package sshd
