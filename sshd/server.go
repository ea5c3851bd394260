package sshd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

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
	s.handler = chain(s.route, recoverer, logging, s.authenticate)
	s.srv = &ssh.Server{
		Addr:                     cfg.Addr,
		Handler:                  s.serveSession,
		HostSigners:              []ssh.Signer{cfg.HostSigner},
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
	id     uint64
	log    *slog.Logger
	authed chan struct{} // closed once authentication succeeded

	mu       sync.Mutex      // guards the fields below
	verified gossh.PublicKey // the key whose signature was verified
	authDone bool
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

func (cs *connState) setVerified(key gossh.PublicKey) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.verified = key
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
func (s *Server) connOpened(ctx ssh.Context, conn net.Conn) net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil // gliderlabs closes it
	}
	id := s.nextID.Add(1)
	cs := &connState{id: id, authed: make(chan struct{}),
		log: s.log.With("conn", id, "remote", conn.RemoteAddr().String())}
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
func (s *Server) serverConfig(ctx ssh.Context) *gossh.ServerConfig {
	cs := connStateOf(ctx)
	return &gossh.ServerConfig{
		MaxAuthTries: s.cfg.MaxAuthTries,
		VerifiedPublicKeyCallback: func(_ gossh.ConnMetadata, key gossh.PublicKey, perms *gossh.Permissions, _ string) (*gossh.Permissions, error) {
			cs.setVerified(key)
			return perms, nil
		},
		AuthLogCallback: func(_ gossh.ConnMetadata, method string, err error) {
			if err == nil {
				cs.authenticated()
				return
			}
			if method != "none" {
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
