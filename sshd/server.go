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

	"github.com/jonboulle/clockwork"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// ErrServerClosed is what Serve returns after Shutdown or Close.
var ErrServerClosed = errors.New("sshd: server closed")

// Config configures a Server; New fills in the defaults.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on (default ":2222").
	Addr string
	// HostSigner is the host key (required; keys.LoadOrCreateHostKey).
	HostSigner gossh.Signer
	// Keys authorizes public keys (required; usually a *keys.KeyStore).
	Keys Authorizer
	// SignIn, when set, lets a key no authorized_keys line accepts sign in
	// through the identity provider (signin.go).
	SignIn *SignIn
	// UserCAs authorizes OpenSSH user certificates (usually a
	// *keys.CAStore); nil refuses every certificate.
	UserCAs CertAuthorizer
	// CompatAlgorithms also offers the NIST ECDH key exchanges and the
	// encrypt-and-MAC MACs, for clients that have nothing else
	// (algorithms.go). Off, ssh-audit finds nothing to fail.
	CompatAlgorithms bool
	// Audit receives the audit trail: authentication successes and
	// failures, attach, detach, reset (nil: none).
	Audit *audit.Log
	// Registry holds the sessions (required).
	Registry *sessions.Registry
	// Remote runs what goes beside a session in an instance: commands,
	// the sftp subsystem and forwarded connections (nil: refused, with a
	// reason the client prints).
	Remote remote.Runner
	// AcceptEnv are the variables (names or globs, ParseAcceptEnv) that
	// clients' env requests may set for commands and new sessions
	// (--accept-env); nil is DefaultAcceptEnv. TERMGATE_ ones never.
	AcceptEnv []string
	// Switches are the gateway-wide flags the access decision applies
	// (--port-forwarding=false, --file-transfer=false).
	Switches keys.Switches
	// MaxRemotePerKey and MaxRemotePerInstance cap the commands,
	// transfers and forwarded connections running at once per key and
	// per instance (defaults 32 and 64; negative: no cap).
	MaxRemotePerKey      int
	MaxRemotePerInstance int
	// ForwardIdleTimeout closes a forwarded connection that moved no
	// byte either way for this long (default 15m; negative: never).
	ForwardIdleTimeout time.Duration
	// PublicHost is the host name the notices print in the command that
	// comes back (--public-host's first name, without a port); empty: the
	// address the client connected to (hint.go).
	PublicHost string
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
	// to every connection (default 20s, so that a peer silent past the
	// liveness timeout of 60 s is closed within 80 s; negative disables
	// keepalives).
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
	cfg       Config
	acceptEnv []string // cfg.AcceptEnv or its default
	log       *slog.Logger
	host      gossh.Signer
	handler   handler                  // the middleware chain
	channels  map[string]channelOpener // by channel type; others are refused
	track     tracker                  // every goroutine this package starts
	nextID    atomic.Uint64
	lim       *limits
	remote    remoteOps // commands, transfers and forwards (remoteops.go)
	fwdStats  forwardStats
	agents    *agentBroker // forwarded agents' sockets (agent.go)

	mu        sync.Mutex              // guards the fields below; taken before limits.mu
	conns     map[net.Conn]*connState // every connection, from accept to close
	listeners map[net.Listener]struct{}
	addr      net.Addr // of the last listener given to Serve
	closing   bool
}

// channelOpener serves one channel a client opens, from its open to its
// end, in a goroutine of its own.
type channelOpener func(cs *connState, nc gossh.NewChannel)

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
	defaultInt(&cfg.MaxRemotePerKey, defaultMaxRemotePerKey)
	defaultInt(&cfg.MaxRemotePerInstance, defaultMaxRemotePerInstance)
	if cfg.ForwardIdleTimeout == 0 {
		cfg.ForwardIdleTimeout = 15 * time.Minute
	}
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
		cfg.KeepaliveInterval = 20 * time.Second
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
	s := &Server{cfg: cfg, log: cfg.Logger, host: host, conns: map[net.Conn]*connState{}, listeners: map[net.Listener]struct{}{}}
	s.agents = newAgentBroker(s)
	s.lim = newLimits(&s.cfg)
	s.handler = chain(s.route, recoverer, logging, s.authenticate)
	s.acceptEnv = cfg.AcceptEnv
	if s.acceptEnv == nil {
		s.acceptEnv = DefaultAcceptEnv
	}
	// Sessions and forwarded connections (direct-tcpip: ssh -L, -D, -W;
	// direct-streamlocal: -L to a socket); X11 and other channels have
	// no opener and are refused.
	s.channels = map[string]channelOpener{"session": s.sessionChannel, "direct-tcpip": s.forwardChannel, "direct-streamlocal@openssh.com": s.streamlocalChannel}
	return s, nil
}

// defaultInt sets *v to def when it is zero.
func defaultInt(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}

// Serve accepts connections on l until Shutdown or Close, after which it
// returns ErrServerClosed. It closes l when it returns.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = l.Close()
		return ErrServerClosed
	}
	s.listeners[l], s.addr = struct{}{}, l.Addr()
	s.track.add() // Shutdown waits for Serve to return, too
	s.mu.Unlock()
	defer s.track.done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		_ = l.Close()
	}()
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				// Out of descriptors, say: back off as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.track.Go(func() { s.serveConn(nc) })
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
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
	return s.addr
}

// Shutdown stops accepting, closes the connections still in their
// handshake, ends the running commands, transfers and forwards (telling
// their clients why), then waits for the others to end (sessions end when the
// registry shuts down) and for every goroutine of the package. It returns
// ctx.Err() when ctx ends first; call Close then.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop(func(cs *connState) bool { return !cs.isAuthenticated() })
	s.cutAtShutdown()
	return s.track.wait(ctx)
}

// Close closes the listener and every connection, then waits for the
// package's goroutines (each is bounded: shell starts and resets by the
// registry's timeouts, the rest by the closed connections).
func (s *Server) Close() error {
	s.stop(func(*connState) bool { return true })
	_ = s.track.wait(context.Background())
	return nil
}

// stop marks the server closing, closes its listeners and the connections
// drop picks.
func (s *Server) stop(drop func(*connState) bool) {
	s.mu.Lock()
	s.closing = true
	var closers []io.Closer
	for l := range s.listeners {
		closers = append(closers, l)
	}
	var cancels []context.CancelFunc
	for c, cs := range s.conns {
		if drop(cs) {
			closers = append(closers, c)
			cancels = append(cancels, cs.cancel) // a sign-in waiting for its browser (signin.go)
		}
	}
	s.mu.Unlock()
	s.agents.close() // their helpers end; a held session's get a new one at the next ssh -A
	for _, cancel := range cancels {
		cancel()
	}
	for _, c := range closers { // outside s.mu: closing is I/O
		_ = c.Close()
	}
}
