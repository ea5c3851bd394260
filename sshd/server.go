package sshd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gliderlabs/ssh"
	"github.com/jonboulle/clockwork"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// Config configures a Server; New fills in the defaults.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on (default ":2222").
	Addr string
	// HostSigner is the host key (required; keys.LoadOrCreateHostKey).
	HostSigner gossh.Signer
	// Keys authorizes public keys (required; usually a *keys.KeyStore).
	Keys Authorizer
	// UserCAs authorizes OpenSSH user certificates (usually a
	// *keys.CAStore); nil refuses every certificate.
	UserCAs CertAuthorizer
	// Audit receives the audit trail: authentication successes and
	// failures, attach, detach, reset (nil: none).
	Audit *audit.Log
	// Registry holds the sessions (required).
	Registry *sessions.Registry
	// Logger receives the server's log (default: discard).
	Logger *slog.Logger
	// MaxAuthTries is the number of failed authentication attempts allowed
	// per connection (default 6, as OpenSSH).
	MaxAuthTries int
	// HandshakeTimeout bounds the SSH handshake, authentication included
	// (default 20s).
	HandshakeTimeout time.Duration
	// MaxPreAuthPerIP caps the connections from one source (an IPv4
	// address or an IPv6 /64) that have not authenticated yet; more are
	// closed as soon as they are accepted (default 10; negative: no cap).
	MaxPreAuthPerIP int
	// MaxPreAuth caps the unauthenticated connections in total (default
	// 100; negative: no cap).
	MaxPreAuth int
	// AuthFailLimit is how many failed connections (ones that tried to
	// authenticate and never did) a source may have within AuthFailWindow;
	// the one that reaches it locks the source out for AuthLockout: its new
	// connections are closed at once and its open ones cannot authenticate
	// (default 5; negative: no lock-out).
	AuthFailLimit int
	// AuthFailWindow is the window AuthFailLimit counts in (default 5m).
	AuthFailWindow time.Duration
	// AuthLockout is how long a source stays locked out (default 10m).
	AuthLockout time.Duration
	// MaxConnsPerKey caps the authenticated connections per key (a
	// certificate counts as its key); authentication beyond it fails with a
	// banner saying why (default 20; negative: no cap).
	MaxConnsPerKey int
	// MaxSessionsPerKey caps the concurrent sessions (attach, reset, list,
	// help) per key over all its connections (default 20; negative: no
	// cap).
	MaxSessionsPerKey int
	// MaxChannelsPerConn caps the session channels open at once on one
	// connection, started or not (default 10, as OpenSSH's MaxSessions;
	// negative: no cap). Every channel also takes one of its key's
	// MaxSessionsPerKey slots.
	MaxChannelsPerConn int
	// ChannelStartTimeout is how long a session channel may stay open
	// without asking for a shell or a command before it is closed
	// (default 5s).
	ChannelStartTimeout time.Duration
	// Clock drives the failure windows and lock-outs (default: the real
	// clock).
	Clock clockwork.Clock
	// KeepaliveInterval is how often a keepalive@openssh.com request is sent
	// to every connection (default 30s; negative disables keepalives).
	KeepaliveInterval time.Duration
	// KeepaliveMax is how many keepalive intervals may pass without an answer
	// before the connection is closed (default 3).
	KeepaliveMax int
	// CommandTimeout bounds a reset (default 60s).
	CommandTimeout time.Duration
	// CloseGrace is how long a client has to close its channel after the
	// gateway sent the exit status; after it the connection is closed
	// (default 5s).
	CloseGrace time.Duration
}

// Server is termgate's SSH listener.
type Server struct {
	cfg     Config
	log     *slog.Logger
	srv     *ssh.Server
	handler ssh.Handler // the middleware chain
	track   tracker     // every goroutine this package starts
	nextID  atomic.Uint64
	lim     *limits

	mu       sync.Mutex              // guards the fields below
	conns    map[net.Conn]*connState // every connection, from accept to close
	listener net.Listener            // the last one given to Serve
	closing  bool
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.HostSigner == nil:
		return nil, errors.New("sshd: no host key")
	case cfg.Keys == nil:
		return nil, errors.New("sshd: no authorized keys")
	case cfg.Registry == nil:
		return nil, errors.New("sshd: no session registry")
	}
	if cfg.Addr == "" {
		cfg.Addr = ":2222"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxAuthTries <= 0 {
		cfg.MaxAuthTries = 6
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 20 * time.Second
	}
	defaultInt(&cfg.MaxPreAuthPerIP, 10)
	defaultInt(&cfg.MaxPreAuth, 100)
	defaultInt(&cfg.AuthFailLimit, 5)
	defaultInt(&cfg.MaxConnsPerKey, 20)
	defaultInt(&cfg.MaxSessionsPerKey, 20)
	defaultInt(&cfg.MaxChannelsPerConn, 10)
	if cfg.ChannelStartTimeout <= 0 {
		cfg.ChannelStartTimeout = 5 * time.Second
	}
	if cfg.AuthFailWindow <= 0 {
		cfg.AuthFailWindow = 5 * time.Minute
	}
	if cfg.AuthLockout <= 0 {
		cfg.AuthLockout = 10 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	host, err := hostSigner(cfg.HostSigner)
	if err != nil {
		return nil, err
	}
	if cfg.KeepaliveInterval == 0 {
		cfg.KeepaliveInterval = 30 * time.Second
	}
	if cfg.KeepaliveMax <= 0 {
		cfg.KeepaliveMax = 3
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = time.Minute
	}
	if cfg.CloseGrace <= 0 {
		cfg.CloseGrace = 5 * time.Second
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[net.Conn]*connState{}}
	s.lim = newLimits(&s.cfg)
	s.handler = chain(s.route, recoverer, logging, s.authenticate)
	s.srv = &ssh.Server{
		Addr:                     cfg.Addr,
		Handler:                  s.serveSession,
		HostSigners:              []ssh.Signer{host},
		Version:                  "termgate",
		PublicKeyHandler:         s.publicKey, // the only auth method: no password, no keyboard-interactive
		ConnCallback:             s.connOpened,
		ServerConfigCallback:     s.serverConfig,
		ConnectionFailedCallback: s.connFailed,
		// Only "session" channels; port forwarding needs "direct-tcpip"
		// and the "tcpip-forward" request, which have no handler.
		ChannelHandlers: map[string]ssh.ChannelHandler{
			"session": s.sessionChannel,
			"default": rejectChannel,
		},
		RequestHandlers:   map[string]ssh.RequestHandler{},
		SubsystemHandlers: map[string]ssh.SubsystemHandler{},
		// No IdleTimeout: an attached session may be silent for hours
		// (keepalives find dead peers instead).
	}
	return s, nil
}

// defaultInt sets *v to def when it is zero.
func defaultInt(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}

// Serve accepts connections on l until Shutdown or Close, after which it
// returns ssh.ErrServerClosed.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = l.Close()
		return ssh.ErrServerClosed
	}
	s.listener = l
	s.mu.Unlock()
	return s.srv.Serve(l)
}

// ListenAndServe listens on Config.Addr and serves.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Addr is the address of the listener given to Serve, or nil before.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// Shutdown stops accepting, closes the connections still in their
// handshake, then waits for the others to end (sessions end when the
// registry shuts down) and for every goroutine of the package. It returns
// ctx.Err() when ctx ends first; call Close then.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for c, cs := range s.conns {
		if !cs.isAuthenticated() {
			_ = c.Close()
		}
	}
	s.mu.Unlock()
	if err := s.srv.Shutdown(ctx); err != nil {
		return err
	}
	return s.track.wait(ctx)
}

// Close closes the listener and every connection, then waits for the
// package's goroutines (each is bounded: shell starts and resets by the
// registry's timeouts, the rest by the closed connections).
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	err := s.srv.Close()
	_ = s.track.wait(context.Background())
	return err
}

// connState is what the server knows about one connection; it lives in the
// connection's ssh.Context under ctxKeyConnState.
type connState struct {
	id      uint64
	log     *slog.Logger
	remote  net.Addr
	src     netip.Prefix  // what the per-source limits count
	authed  chan struct{} // closed once authentication succeeded
	preauth func()        // releases the pre-authentication slot

	mu       sync.Mutex      // guards the fields below
	verified gossh.PublicKey // the key whose signature was verified
	identity keys.Identity   // the verified key's identity
	keySlot  func()          // releases the key's connection slot; nil before
	channels int             // session channels open (MaxChannelsPerConn)
	authDone bool
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

type ctxKey struct{ name string }

var (
	ctxKeyConnState = &ctxKey{"termgate-conn"}
	ctxKeyIdentity  = &ctxKey{"termgate-identity"}
)

func connStateOf(ctx ssh.Context) *connState {
	cs, _ := ctx.Value(ctxKeyConnState).(*connState)
	return cs
}

func (cs *connState) authenticated() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.authDone {
		cs.authDone = true
		close(cs.authed)
	}
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

// connOpened registers a new connection and starts its watcher (handshake
// deadline, then keepalives). The deadline is a timer that closes the
// connection rather than conn.SetDeadline: gliderlabs resets the deadline
// of its connection wrapper on every Read and Write.
//
// A connection over the pre-authentication caps, or from a locked-out
// source, is closed here, before any byte of SSH is spent on it.
func (s *Server) connOpened(ctx ssh.Context, conn net.Conn) net.Conn {
	var dropped func()
	defer func() {
		if dropped != nil {
			dropped() // outside s.mu: closing is I/O
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil // gliderlabs closes it
	}
	src := sourceOf(conn.RemoteAddr())
	id := s.nextID.Add(1)
	log := s.log.With("conn", id, "remote", conn.RemoteAddr().String())
	release, dropped, refused := s.lim.admit(src, func() {
		log.Info("unauthenticated connection dropped to make room for a newer one", "limit", s.cfg.MaxPreAuth)
		_ = conn.Close()
	})
	if refused != "" {
		s.log.Debug("connection refused", "remote", conn.RemoteAddr().String(), "reason", refused)
		return nil
	}
	cs := &connState{id: id, authed: make(chan struct{}), remote: conn.RemoteAddr(), src: src, preauth: release, log: log}
	ctx.SetValue(ctxKeyConnState, cs)
	s.conns[conn] = cs
	s.track.Go(func() { s.watchConn(ctx, conn, cs) })
	return conn
}

// watchConn enforces the handshake deadline, then sends keepalives until
// the connection closes (gliderlabs cancels ctx when it does).
func (s *Server) watchConn(ctx ssh.Context, conn net.Conn, cs *connState) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		s.connEnded(cs)
	}()
	deadline := time.NewTimer(s.cfg.HandshakeTimeout)
	select {
	case <-cs.authed:
		deadline.Stop()
	case <-deadline.C:
		cs.log.Info("handshake timed out", "timeout", s.cfg.HandshakeTimeout)
		_ = conn.Close()
		return
	case <-ctx.Done():
		deadline.Stop()
		return
	}
	s.keepalive(ctx, conn, cs)
}

// serverConfig is the per-connection x/crypto configuration; gliderlabs adds
// the host key and the public-key callback.
//
// VerifiedPublicKeyCallback runs only for the key whose signature was
// verified: that is where the identity is derived and the key's connection
// slot taken. AuthLogCallback sees every attempt's outcome.
func (s *Server) serverConfig(ctx ssh.Context) *gossh.ServerConfig {
	cs := connStateOf(ctx)
	return &gossh.ServerConfig{
		Config:                  algorithmConfig(),
		PublicKeyAuthAlgorithms: publicKeyAuthAlgorithms,
		MaxAuthTries:            s.cfg.MaxAuthTries,
		VerifiedPublicKeyCallback: func(_ gossh.ConnMetadata, key gossh.PublicKey, perms *gossh.Permissions, _ string) (*gossh.Permissions, error) {
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
				s.prefetch(ctx, cs, conn.User())
				return
			}
			if method != "none" {
				cs.attemptFailed(conn.User(), method, err, errors.Is(err, errKeyConnLimit))
				cs.log.Debug("authentication attempt failed", "method", method, "err", err)
			}
		},
	}
}

func (s *Server) connFailed(conn net.Conn, err error) {
	level := slog.LevelInfo
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		level = slog.LevelDebug // port scanners, health checks, our own handshake timeout
	}
	s.log.Log(context.Background(), level, "ssh handshake failed", "remote", conn.RemoteAddr().String(), "err", err)
}

// serveSession is gliderlabs' handler: it wraps the session, runs the
// middleware chain, and makes sure the exit status is sent and the channel
// closed before it returns.
func (s *Server) serveSession(gs ssh.Session) {
	s.track.add()
	defer s.track.done()
	sess := newSession(gs, s.cfg.CloseGrace)
	if cs := connStateOf(gs.Context()); cs != nil {
		sess.log = cs.log
	} else {
		sess.log = s.log
	}
	defer sess.end(0)
	s.handler(sess)
}
