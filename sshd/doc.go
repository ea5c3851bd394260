// Package sshd is termgate's SSH listener: `ssh -t web1@gateway` attaches
// to the persistent session of instance web1 through the shared
// sessions.Registry, and `ssh gateway reset web1`, `list` and `help` manage
// sessions.
//
// # Library
//
// The server is github.com/gliderlabs/ssh (v0.3.8) on golang.org/x/crypto/ssh,
// not charmbracelet/wish: wish is built on a fork (charmbracelet/ssh) whose
// types do not mix with gliderlabs', it pulls bubbletea, lipgloss and go-git
// into the module graph, and its WithAuthorizedKeys ignores key options
// (termgate needs instances= and from=). The few middlewares termgate needs
// are written here in wish's shape, Middleware func(ssh.Handler) ssh.Handler:
//
//	recover → logging → auth → routing (attach, reset, list, help)
//
// # Authentication
//
// Public keys only (Config.Keys, usually a *keys.KeyStore), and OpenSSH
// user certificates when Config.UserCAs is set (a *keys.CAStore from
// --trusted-user-ca-keys): a certificate's principals are the instance
// patterns it may use, see keys.UserCAs.AuthorizeCertAt. A certificate is
// judged as a certificate only, never by its bare key. Password and
// keyboard-interactive are not offered. A key accepted during the
// handshake is not trusted by itself: x/crypto calls the public-key callback
// for keys the client only offers, so the auth middleware re-derives the
// identity from the session's key (and checks it is the key whose signature
// was verified), authorizing it again. That also means a key removed from
// authorized_keys (or a certificate that expired) cannot open new sessions
// on a connection that is still up. The handshake, including
// authentication, must finish within Config.HandshakeTimeout.
//
// # Algorithms
//
// Explicit lists (algorithms.go), nothing with SHA-1 and no CBC: key
// exchange mlkem768x25519-sha256, curve25519-sha256 (and its @libssh.org
// name), ecdh-sha2-nistp256/384/521; ciphers chacha20-poly1305@openssh.com,
// aes128/256-gcm@openssh.com, aes128/192/256-ctr; MACs
// hmac-sha2-256/512 and their -etm@openssh.com forms; client signatures
// ed25519, ecdsa, their security-key forms, and RSA only as
// rsa-sha2-256/512. The host key is ed25519 (an RSA host key would sign
// with rsa-sha2-* only). sntrup761x25519-sha512@openssh.com is not in this
// x/crypto.
//
// # Limits
//
// Against floods and guessing (limits.go; a source is an IPv4 address or
// an IPv6 /64):
//
//   - at most Config.MaxPreAuthPerIP (10) unauthenticated connections per
//     source and Config.MaxPreAuth (100) in total; more are closed as soon
//     as they are accepted, before any SSH is spoken. When the total is
//     full, a newcomer instead takes the slot of the oldest connection of
//     the source holding the most, if that source holds more than the
//     newcomer's would, else of the oldest connection once it is a second
//     old (preauth.go): a few sources, or a crowd of idle ones, cannot
//     lock logins out. Authenticated connections hold no such slot.
//   - a connection that tried to authenticate and closed without
//     succeeding is a failure of its source; Config.AuthFailLimit (5)
//     failures within Config.AuthFailWindow (5m) lock the source out for
//     Config.AuthLockout (10m): its new connections are closed at once and
//     its connections still authenticating are refused whatever the key.
//     Counting connections rather than attempts means an agent offering
//     several keys before the right one costs nothing. A lock-out hits
//     everyone behind the source's address (a NAT); sessions already
//     authenticated keep running, and other sources are not affected.
//   - at most Config.MaxConnsPerKey (20) authenticated connections and
//     Config.MaxSessionsPerKey (20) sessions per key (a certificate counts
//     as its key), and Config.MaxChannelsPerConn (10) sessions per
//     connection; the client is told why (an authentication banner, or the
//     reason of a refused channel open). Every session channel counts from
//     its open until it is gone, whether or not it ever asks for a shell or
//     command. Being over these caps is not counted as a failure.
//   - a session channel that asks for no shell or command within
//     Config.ChannelStartTimeout (5s) is closed. x/crypto grants every
//     channel a fixed 2 MiB window and keeps unread data as a list of the
//     client's packets (about 48 bytes of heap per byte in one-byte
//     packets), so each channel's data is pumped as it arrives into a
//     64 KiB inbox (inbox.go); a channel that sends more than that before
//     it starts is closed, and sessions that read no input (reset, list,
//     help) discard it. Once a shell is attached the pump hands data to
//     it directly, and while the shell is slow to take it the client is
//     held back by its window, for at most the registry's InputTimeout.
//
// # Routing
//
// The SSH command line (the raw string, never shell-unquoted: an unbalanced
// quote must not turn a command into an attach) is one of:
//
//	(none)            attach to the instance named by the SSH user name
//	reset [INSTANCE]  reset INSTANCE (default: the SSH user name)
//	list              the sessions this key may see
//	help              usage
//
// Anything else prints the usage on stderr with exit status 2. The instance
// name is checked (sessions.CheckName) and the key's instances= patterns
// are applied before any registry or backend call; a key that may not use an
// instance gets the same "instance NAME not found or not running" message as
// for a missing one, so it cannot probe which instances exist.
//
// Exit statuses: 0 for a successful command, the shell's own status when it
// exits, 1 for every refusal or failure (bad name, not found or not allowed,
// no-pty key asking for a terminal, reset failed, and the session ending
// under the client: instance stopped, client too slow, gateway shutting
// down, backend lost), 2 for a usage error.
//
// # Attach
//
// A PTY request's size is the session's size; 0x0 (what `ssh -tt` sends when
// its input is not a terminal) means unknown and keeps the session's size,
// and sizes outside 1..1000 are reported with a one-line warning on stderr
// and treated as unknown. Window changes resize the session (the latest
// request wins); they are taken off the channel before gliderlabs sees them,
// since gliderlabs blocks the channel's request loop once two are pending. A client without a PTY is attached all the same (its
// output is the remote terminal's); keys with no-pty or restrict are refused
// an attach.
//
// Output is relayed byte for byte: gliderlabs' Session.Write turns every
// "\n" into "\r\n" once a PTY was requested, which would break full-screen
// programs whose terminal is in raw mode, so the relay writes to the
// underlying channel (see channel.go). When the SSH channel closes (the
// client quit or typed ~.) the client detaches and the shell keeps running.
// A reset moves the client to the fresh shell (sessions does it; keys typed
// meanwhile go to the new shell) and the relay prints a one-line notice;
// when the shell exits, the client gets its exit status.
//
// Revocation is immediate: every attach carries a check of the live
// credentials (revoke.go: the key still authorized, its instances= or
// principals still matching the instance's current name), which the
// registry asks on every attach, so before moving a client into the fresh
// shell of a reset, on Registry.Recheck after every reload, and at the
// ValidBefore of the certificate a client attached with (certexpiry.go). A
// refused client reads "[termgate] access revoked: ...; disconnected", gets exit
// status 1, and its whole connection is closed.
//
// # Refused
//
// Port forwarding (direct-tcpip channels, tcpip-forward requests), agent
// forwarding, X11 forwarding and subsystems (sftp) are refused; no channel
// type but "session" is accepted. env requests are accepted for TERM, LANG
// and LC_* only, and even those are dropped: the shell's environment is the
// instance's (sessions.AttachOptions carries only the PTY's TERM), so
// nothing a client sends reaches a shell's environment.
//
// # Liveness
//
// There is no idle timeout: an attached session may be silent for hours.
// Instead every connection gets a keepalive@openssh.com request every
// Config.KeepaliveInterval (30 s) and is closed after
// Config.KeepaliveMax (3) unanswered in a row.
//
// Neither side can pin a connection (relayio.go): the channel's pump writes
// input to the session itself (no hand-off per keystroke), and when the
// shell takes none for the registry's InputTimeout the user is told once
// and further input is read and dropped (one chunk at a time offered to
// the shell by a retry goroutine) until the shell takes input again, so
// the channel is always read and a closed connection always noticed. Once the attached client is
// closed (dropped as too slow, revoked, reset, detached), any write to the
// channel still blocked after Config.CloseGrace closes the whole
// connection (x/crypto's writes have no deadline; a client with a full
// window or TCP buffer would otherwise hold the relay forever); a client
// that reads again within the grace gets its notice.
//
// # Shutdown
//
// Shutdown stops accepting, drops connections still in their handshake and
// waits for the others to end; run sessions.Registry.Shutdown alongside it
// so that attached clients are told and disconnected, and call Close if the
// deadline passes. Close drops every connection. Both wait for every
// goroutine the package started.
//
// # Audit
//
// With Config.Audit set, the server writes one audit event per
// authentication success (identity, key, source, user name) and per
// connection that failed to authenticate (last key tried, reason, attempts,
// and the lock-out it started), per attach (result ok, failed or denied),
// detach (with its cause), and reset (ok, failed or denied). Reap and
// session-end events come from the registry (sessions.Config.OnEnd, wired
// in cmd/termgate).
//
// This package logs through Config.Logger only: connection-scoped
// attributes (conn, remote) come from the connection, session-scoped ones
// (user, key, command, instance, session) from the middlewares. What the
// user reads is written for the user; the detail goes to the log.
package sshd
