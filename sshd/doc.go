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
// Public keys only (Config.Keys, usually a *keys.KeyStore); password and
// keyboard-interactive are not offered. A key accepted during the handshake
// is not trusted by itself: x/crypto calls the public-key callback for keys
// the client only offers, so the auth middleware re-derives the identity
// from the session's key (and checks it is the key whose signature was
// verified), calling Authorize again. That also means a key removed from
// authorized_keys cannot open new sessions on a connection that is still up.
// The handshake, including authentication, must finish within
// Config.HandshakeTimeout.
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
// A reset prints a one-line notice and moves the client to the fresh shell;
// when the shell exits, the client gets its exit status.
//
// # Refused
//
// Port forwarding (direct-tcpip channels, tcpip-forward requests), agent
// forwarding, X11 forwarding and subsystems (sftp) are refused; no channel
// type but "session" is accepted.
//
// # Liveness
//
// There is no idle timeout: an attached session may be silent for hours.
// Instead every connection gets a keepalive@openssh.com request every
// Config.KeepaliveInterval (30 s) and is closed after
// Config.KeepaliveMax (3) unanswered in a row.
//
// # Shutdown
//
// Shutdown stops accepting, drops connections still in their handshake and
// waits for the others to end; run sessions.Registry.Shutdown alongside it
// so that attached clients are told and disconnected, and call Close if the
// deadline passes. Close drops every connection. Both wait for every
// goroutine the package started.
//
// This package logs through Config.Logger only: connection-scoped
// attributes (conn, remote) come from the connection, session-scoped ones
// (user, key, command, instance, session) from the middlewares. What the
// user reads is written for the user; the detail goes to the log.
package sshd
