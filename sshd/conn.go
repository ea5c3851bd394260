package sshd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// connState is what the server knows about one connection.
type connState struct {
	id      uint64
	log     *slog.Logger
	nc      net.Conn // closing it ends the connection
	remote  net.Addr
	src     netip.Prefix // what the per-source limits count
	preauth func()       // releases the pre-authentication slot
	// ctx ends when the connection does; sessions' calls made for it
	// (attach, reset, the prefetch) run under it.
	ctx    context.Context
	cancel context.CancelFunc
	login  string  // the user name it authenticated as; set before any channel opens
	target sshUser // login read as [LOGIN@]INSTANCE[+NAME] (user.go); set with it

	// sshConn is the SSH connection, for channels to the client (its
	// agent: agent.go); set with login.
	sshConn gossh.Conn

	mu          sync.Mutex        // guards the fields below
	verified    gossh.PublicKey   // the key whose signature was verified
	identity    keys.Identity     // the verified key's identity
	proven      []gossh.PublicKey // unknown keys the client proved it holds, for a sign-in (signin.go)
	signinEnded bool              // a browser sign-in was denied or timed out: no second one on this connection
	keySlot     func()            // releases the key's connection slot; nil before
	channels    int               // session channels open (MaxChannelsPerConn)
	authDone    bool
	// Failed authentication attempts (method "none" aside), for the
	// lock-out and the audit trail: how many, how many of them only hit
	// MaxConnsPerKey, the last key refused and why.
	failures, capRefusals int
	lastKey, lastReason   string
	user                  string // the user name of the last attempt
	pending               string // why the public-key callback refused the current attempt
	// prefetch is the lookup of the instance the login name names,
	// started once the client authenticated (see prefetch.go); nil when
	// the name cannot be attached to by this key.
	prefetch *sessions.Prefetch
}

// serveConn runs one connection from accept to close: admission, the
// handshake, then its channels, each opened in a goroutine of its own.
// Global requests are answered in order by globalRequests (remotefwd.go: ssh -R); keepalives go out
// from their own goroutine.
func (s *Server) serveConn(nc net.Conn) {
	cs := s.connOpened(nc)
	if cs == nil {
		_ = nc.Close()
		return
	}
	defer s.connClosed(cs)
	sc, chans, reqs, err := s.handshake(cs)
	if err != nil {
		return
	}
	defer sc.Close()
	cs.login = sc.User()
	cs.sshConn = sc
	cs.target = parseUser(cs.login)
	s.track.Go(func() { s.keepalive(cs, sc) })
	s.track.Go(func() { s.globalRequests(cs, sc, reqs) })
	for nch := range chans { // until the connection ends
		open, ok := s.channels[nch.ChannelType()]
		if !ok {
			open = rejectChannel
		}
		s.track.Go(func() { open(cs, nch) })
	}
}

// connOpened registers a new connection, or returns nil when it is over
// the pre-authentication caps, from a locked-out source or arrives while
// the server closes: it is closed before any byte of SSH is spent on it.
func (s *Server) connOpened(nc net.Conn) *connState {
	var dropped func()
	defer func() {
		if dropped != nil {
			dropped() // outside s.mu: closing is I/O
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil
	}
	src := sourceOf(nc.RemoteAddr())
	id := s.nextID.Add(1)
	// Until it authenticates a connection is its address; the sessions
	// it opens then log who instead (authenticate).
	log := s.log.With("via", "ssh", "remote", nc.RemoteAddr().String())
	release, dropped, refused := s.lim.admit(src, func() {
		log.Info("unauthenticated connection dropped to make room for a newer one", "limit", s.cfg.MaxPreAuth)
		_ = nc.Close()
	})
	if refused != "" {
		s.log.Debug("connection refused", "remote", nc.RemoteAddr().String(), "reason", refused)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	cs := &connState{id: id, log: log, nc: nc, remote: nc.RemoteAddr(), src: src, preauth: release, ctx: ctx, cancel: cancel}
	s.conns[nc] = cs
	return cs
}

// connClosed forgets a connection that ended and settles its accounts.
func (s *Server) connClosed(cs *connState) {
	cs.cancel()
	_ = cs.nc.Close()
	s.mu.Lock()
	delete(s.conns, cs.nc)
	s.mu.Unlock()
	s.connEnded(cs)
}

// handshake runs the SSH handshake, authentication included, within
// HandshakeTimeout (the deadline is the connection's own: nothing else
// reads or writes it meanwhile).
func (s *Server) handshake(cs *connState) (*gossh.ServerConn, <-chan gossh.NewChannel, <-chan *gossh.Request, error) {
	deadline := time.Now().Add(s.cfg.HandshakeTimeout)
	_ = cs.nc.SetDeadline(deadline)
	nc := withQuickAck(cs.nc) // see quickack.go: 80 ms of Nagle stalls otherwise
	sc, chans, reqs, err := gossh.NewServerConn(nc, s.serverConfig(cs))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(deadline) {
			cs.log.Info("handshake timed out", "timeout", s.cfg.HandshakeTimeout)
		} else {
			s.handshakeFailed(cs, err)
		}
		return nil, nil, nil, err
	}
	handshakeDone(nc)
	_ = cs.nc.SetDeadline(time.Time{}) // an attached session may be silent for hours
	return sc, chans, reqs, nil
}

func (s *Server) handshakeFailed(cs *connState, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		// Port scanners, health checks, connections dropped for newer ones.
		cs.log.Debug("ssh handshake failed", "err", err)
		return
	}
	var auth *gossh.ServerAuthError
	if errors.As(err, &auth) {
		// A refusal: every key the client offered was turned down (the
		// audit trail's auth_failure names the last one).
		cs.log.Warn("ssh login refused: no key offered is authorized", "attempts", len(auth.Errors))
		return
	}
	cs.log.Warn("ssh handshake failed", "err", err)
}

// serverConfig is the connection's x/crypto configuration: public keys only
// (no password, no keyboard-interactive), the algorithms of algorithms.go.
//
// PublicKeyCallback runs for every key the client offers, also keys it
// never signs with; VerifiedPublicKeyCallback runs only for the key whose
// signature was verified: that is where the identity is derived and the
// key's connection slot taken. AuthLogCallback sees every attempt's
// outcome.
func (s *Server) serverConfig(cs *connState) *gossh.ServerConfig {
	cfg := &gossh.ServerConfig{
		Config:                  algorithmConfig(s.cfg.CompatAlgorithms),
		ServerVersion:           "SSH-2.0-termgate",
		PublicKeyAuthAlgorithms: publicKeyAuthAlgorithms,
		MaxAuthTries:            s.cfg.MaxAuthTries,
		PublicKeyCallback: func(meta gossh.ConnMetadata, key gossh.PublicKey) (*gossh.Permissions, error) {
			if !s.publicKey(cs, meta.User(), key) {
				if s.signInProbe(cs, key) { // signin.go: let the client prove it
					return &gossh.Permissions{Extensions: map[string]string{extProbe: "1"}}, nil
				}
				return nil, errPermissionDenied
			}
			return &gossh.Permissions{}, nil
		},
		VerifiedPublicKeyCallback: func(_ gossh.ConnMetadata, key gossh.PublicKey, perms *gossh.Permissions, _ string) (*gossh.Permissions, error) {
			if perms != nil && perms.Extensions[extProbe] != "" {
				cs.proved(key) // for a browser sign-in next; this attempt fails
				return nil, errPermissionDenied
			}
			id, err := s.authorize(key, cs.remote)
			if err != nil { // the file changed since the key was offered
				return nil, err
			}
			slot, ok := s.lim.keyConn(capKey(key))
			if !ok {
				return nil, &gossh.BannerError{
					Err:     errKeyConnLimit,
					Message: fmt.Sprintf("termgate: this key already has %d connections open; close one and try again\r\n", s.cfg.MaxConnsPerKey),
				}
			}
			cs.setVerified(key, id, slot)
			return perms, nil
		},
		AuthLogCallback: func(conn gossh.ConnMetadata, method string, err error) {
			if err == nil {
				cs.authenticated()
				cs.preauth()
				s.auditAuthSuccess(cs, conn.User())
				s.prefetch(cs, parseUser(conn.User()))
				return
			}
			if method != "none" {
				cs.attemptFailed(conn.User(), method, err, errors.Is(err, errKeyConnLimit))
				cs.log.Debug("authentication attempt failed", "method", method, "err", err)
			}
		},
	}
	if s.cfg.SignIn != nil {
		cfg.KeyboardInteractiveCallback = func(meta gossh.ConnMetadata, challenge gossh.KeyboardInteractiveChallenge) (*gossh.Permissions, error) {
			return s.keyboardInteractive(cs, meta, challenge)
		}
	}
	cfg.AddHostKey(s.host)
	return cfg
}

// rejectChannel refuses a channel of a type that has no opener: agent
// (auth-agent@openssh.com), X11, anything else.
func rejectChannel(cs *connState, nc gossh.NewChannel) {
	cs.log.Debug("refused a channel", "type", nc.ChannelType())
	_ = nc.Reject(gossh.Prohibited, "termgate: only sessions and forwarding (ssh -L, -D, -W, -R) into instances; no X11 forwarding")
}

func (cs *connState) authenticated() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.authDone = true
}

func (cs *connState) isAuthenticated() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.authDone
}

func (cs *connState) setVerified(key gossh.PublicKey, id keys.Identity, keySlot func()) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.keySlot != nil {
		cs.keySlot() // cannot happen: authentication succeeds once
	}
	cs.verified, cs.identity, cs.keySlot = key, id, keySlot
}

// refused notes why the public-key callback refused a key; the
// authentication log callback that follows records it.
func (cs *connState) refused(key gossh.PublicKey, reason string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.lastKey, cs.pending = keyLabel(key), reason
}

// attemptFailed records a failed authentication attempt.
func (cs *connState) attemptFailed(user, method string, err error, capRefusal bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.failures++
	cs.user = user
	if capRefusal {
		cs.capRefusals++
	}
	switch {
	case cs.pending != "":
		cs.lastReason, cs.pending = cs.pending, ""
	case method != "publickey":
		cs.lastReason = method + " authentication is not offered"
	default:
		cs.lastReason = err.Error()
	}
}

func (cs *connState) releaseChannel() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.channels--
}

func (cs *connState) verifiedKey() gossh.PublicKey {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.verified
}
