package websock

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/oidc"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// maxMessage is the largest WebSocket message a client may send (contract:
// larger ones close the connection with status 1009).
const maxMessage = 1 << 20

// Config configures a Server; New fills in the defaults.
type Config struct {
	// Registry is the shared session registry (required).
	Registry *sessions.Registry
	// Remote serves the files routes through an SFTP server in the
	// instance (nil: they answer 403).
	Remote remote.Runner
	// Switches are the gateway-wide flags the access decision applies
	// (--file-transfer=false, --port-forwarding=false).
	Switches keys.Switches
	// MaxUploadSize bounds a PUT to the files route (default 1 GiB).
	MaxUploadSize int64
	// Tokens checks bearer tokens (required).
	Tokens TokenChecker
	// AllowedOrigins are browser origins ("https://example.com:8443")
	// allowed besides the request's own origin.
	AllowedOrigins []string
	// PublicHosts are the host names ("ops.example.com", or with a port:
	// "ops.example.com:8443") browsers reach the gateway by besides
	// localhost and IP addresses (--public-host): a login or a WebSocket
	// upgrade for any other Host is refused (hosts.go).
	PublicHosts []string
	// Logger receives the server's logs (default: discard).
	Logger *slog.Logger
	// Metrics is served at GET /metrics (to authenticated callers); nil
	// answers 404.
	Metrics http.Handler
	// Page is served at GET / and below (without authentication: it is the
	// page that logs in); nil serves a minimal placeholder page at / only.
	// Every response, the page's included, first gets the security headers
	// (ContentSecurityPolicy, nosniff, no-referrer, frame denial,
	// Cache-Control no-store); Page may replace Cache-Control for static
	// files and may tighten the policy, never loosen it.
	Page http.Handler
	// Audit receives the audit trail: authentication failures (and
	// successes on logins, WebSocket attaches and resets), attaches,
	// detaches and resets, naming the token, never its value. Nil: none.
	Audit *audit.Log
	// TLS, when set, makes Serve speak HTTPS only, TLS 1.2 at least (a
	// lower MinVersion is raised) and HTTP/1.1 (WebSocket upgrades need
	// it); its certificate comes from Certificates or GetCertificate
	// (CertFiles.GetCertificate reloads). Login cookies over TLS are
	// Secure. Nil serves plain HTTP.
	TLS *tls.Config

	// RequestRate is how many requests per second one client address (an
	// IPv4 address or an IPv6 /64) may make, sustained, and RequestBurst
	// how many in a burst (defaults 20 and 100); more get 429 with
	// Retry-After. A negative RequestRate turns the limit off.
	RequestRate  float64
	RequestBurst int
	// AuthFailures is how many wrong tokens (bearer header or login form)
	// one client address may present before every token from it gets 429
	// unchecked (default 10); one more is allowed every AuthFailureEvery
	// (default 30s). Login cookies are not guessable and not limited: a
	// browser logged in before keeps working from a locked-out address. A
	// negative AuthFailures turns the lock-out off.
	AuthFailures     int
	AuthFailureEvery time.Duration
	// MaxBodyBytes bounds request bodies (default 64 KiB; a larger one gets
	// 413); MaxHeaderBytes bounds the request line and headers (default 32
	// KiB; larger: 431). HeaderTimeout is how long a connection may take to
	// send a request's headers (default 10s; then it is closed). Served
	// connections also get a ReadTimeout of 30s for a whole request (the
	// WebSocket read loop sets its own deadlines after the upgrade).
	// IdleTimeout closes a keep-alive connection that sends no request
	// for that long (default 30s).
	MaxBodyBytes   int64
	MaxHeaderBytes int
	HeaderTimeout  time.Duration
	IdleTimeout    time.Duration
	// MaxConnsPerAddr and MaxConns cap the TCP connections Serve holds
	// (WebSockets included) per client address (an IPv4 address or an
	// IPv6 /64; defaults 64) and in total (default 1024). A connection over
	// a cap takes the place of the longest-idle connection (between
	// requests, or before its first) of its address, or for the total of
	// any address; without one it is refused (plain HTTP: a 503 saying
	// why). They apply to Serve only, not to Handler mounted elsewhere.
	MaxConnsPerAddr, MaxConns int

	// UnlimitedResets turns off the reset rate limits (5 resets in a burst,
	// then one every 2 s, per instance; 10, then one a second, per token;
	// shared by POST and control messages): for benchmarks and soak runs
	// that reset in a loop.
	UnlimitedResets bool

	// LoginTTL is how long a browser login cookie stays valid (default
	// 12h). Logins are not kept anywhere: the cookie is signed with
	// CookieKey and names its token by keys.TokenHash, which is looked up
	// in Tokens on every use. A copied cookie therefore stays valid until
	// it expires or its token is removed; signing out only clears it in
	// the browser.
	LoginTTL time.Duration
	// CookieKey is the HMAC-SHA256 key of the login cookies, at least
	// CookieKeyLen (32) bytes. Logins survive a restart that keeps the key
	// (cmd/termgate keeps it in <state-dir>/cookie_key); a new key ends
	// them all. Nil: New makes an ephemeral random key.
	CookieKey []byte
	// WriteTimeout bounds every WebSocket write (default 10s). PingInterval
	// is how often the server pings (default 25s); PongTimeout is how long
	// a connection may stay silent, pongs included, before it is dropped
	// (default 60s).
	WriteTimeout, PingInterval, PongTimeout time.Duration

	// RecordDir is the recording directory (--record-dir): GET
	// /api/recordings/{instance}/{session} serves its files. Empty: that
	// route answers 404.
	RecordDir string

	// OIDC, when set, signs people in with that provider (GET
	// /login/oidc, /oidc/callback; oidc.go); Policies say what each
	// identity may do, and OIDCSessionMax how long a sign-in lasts
	// (default 12h). PublicURLHTTPS marks the cookies Secure behind a
	// proxy that ends TLS.
	OIDC           *oidc.Provider
	Policies       keys.Policies
	OIDCSessionMax time.Duration
	PublicURLHTTPS bool
	// SSHSignins, when set, are the SSH connections waiting for a browser
	// to approve their sign-in (GET and POST /ssh/{code}); an approval
	// lets their key in for KeyTTL (default 12h).
	SSHSignins *oidc.Broker
	KeyTTL     time.Duration
	// SigninState is the shared sign-in state: logouts and remembered SSH
	// keys (nil: in memory only, for one gateway that forgets them when
	// it stops). Its owner starts and closes it.
	SigninState *oidc.Store
}

// Server is the HTTP and WebSocket listener. Its handler can also be
// mounted elsewhere (Handler); Shutdown ends the WebSocket connections in
// either case.
type Server struct {
	cfg      Config
	log      *slog.Logger
	origins  origins
	hosts    hosts
	cookies  *cookies
	upgrader websocket.Upgrader
	handler  http.Handler
	http     *http.Server
	requests *addrLimiter  // nil: no request rate limit
	failures *addrLimiter  // nil: no lock-out after failed authentications
	resets   *resetLimiter // nil: resets are not limited
	limits   *connLimiter  // Serve's connection caps

	mu     sync.Mutex // guards conns, closed, nextID and lastRefusal
	conns  map[*conn]struct{}
	closed bool
	nextID uint64
	// lastRefusal is when a refused connection was last logged at Warn.
	lastRefusal time.Time
	wg          sync.WaitGroup // one per tracked connection

	signins     *signins
	stopSignins chan struct{}  // closed by Shutdown
	signinsDone sync.WaitGroup // watchSignins
	stopOnce    sync.Once
}

// New checks cfg, fills in defaults (config.go) and builds the routes.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	o, err := newOrigins(cfg.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	hs, err := newHosts(cfg.PublicHosts)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := serverTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		origins: o,
		hosts:   hs,
		cookies: &cookies{key: cfg.CookieKey, ttl: cfg.LoginTTL, now: time.Now},
		conns:   map[*conn]struct{}{},
	}
	if err := s.startSignins(); err != nil {
		return nil, err
	}
	if cfg.RequestRate > 0 {
		s.requests = newAddrLimiter(rate.Limit(cfg.RequestRate), cfg.RequestBurst, time.Now)
	}
	if !cfg.UnlimitedResets {
		s.resets = newResetLimiter(time.Now)
	}
	if cfg.AuthFailures > 0 {
		s.failures = newAddrLimiter(rate.Every(cfg.AuthFailureEvery), cfg.AuthFailures, time.Now)
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.WriteTimeout,
		CheckOrigin:      s.upgradeOriginOK,
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			writeError(w, status, "websocket handshake: "+reason.Error())
		},
	}
	s.limits = newConnLimiter(cfg.MaxConnsPerAddr, cfg.MaxConns, s.log.Debug)
	s.handler = s.routes()
	s.http = s.httpServer(tlsCfg)
	return s, nil
}

// startSignins keeps the browser sign-ins' state (in memory without a
// shared store) and, with single sign-on, starts watchSignins, which
// Shutdown stops and waits for.
func (s *Server) startSignins() error {
	state := s.cfg.SigninState
	if state == nil {
		state, _ = oidc.NewStore(oidc.StoreConfig{}) // memory only: never fails
		s.cfg.SigninState = state
	}
	s.signins = newSignins(state, s.cfg.Logger)
	if s.cfg.OIDC == nil {
		return nil
	}
	if err := s.cfg.Policies.Check(); err != nil {
		return err
	}
	s.stopSignins = make(chan struct{})
	s.signinsDone.Add(1)
	go s.watchSignins(s.stopSignins)
	return nil
}

// httpServer is the net/http server of the routes, with the limits of
// the config; HTTP/2 is never offered.
func (s *Server) httpServer(tlsCfg *tls.Config) *http.Server {
	cfg := s.cfg
	h := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       max(30*time.Second, cfg.HeaderTimeout),
		IdleTimeout:       cfg.IdleTimeout,
		ConnState:         func(nc net.Conn, st http.ConnState) { s.limits.state(nc, st) },
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	if tlsCfg != nil {
		h.TLSConfig = tlsCfg
		// An empty, non-nil map keeps net/http from offering HTTP/2.
		h.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	return h
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /api/instances/{name}/terminal", s.authed(actRoute, s.handleTerminal))
	mux.Handle("POST /api/instances/{name}/terminal/reset", s.authed(actRoute, s.handleReset))
	mux.Handle("POST /api/instances/{name}/keep", s.authed(actRoute, s.handleKeep))
	mux.Handle("GET /api/instances/{name}/files", s.authed(readRoute, s.handleFileGet))
	mux.Handle("PUT /api/instances/{name}/files", s.authed(actRoute, s.handleFilePut))
	mux.Handle("GET /api/sessions", s.authed(readRoute, s.handleSessions))
	mux.Handle("GET /api/instances", s.authed(readRoute, s.handleInstances))
	mux.Handle("GET /api/whoami", s.authed(readRoute, s.handleWhoami))
	mux.Handle("GET /api/recordings", s.authed(readRoute, s.handleRecordings))
	mux.Handle("GET /api/recordings/{name}/{session}", s.authed(readRoute, s.handleRecording))
	mux.HandleFunc("POST /api/login", s.handleLogin)
	mux.HandleFunc("GET /api/signin", s.handleSigninOptions)
	if s.cfg.OIDC != nil {
		mux.HandleFunc("GET /login/oidc", s.handleOIDCLogin)
		mux.HandleFunc("GET /oidc/callback", s.handleOIDCCallback)
		if s.cfg.SSHSignins != nil {
			mux.HandleFunc("GET /ssh", s.handleSSHPage)
			mux.HandleFunc("GET /ssh/{code}", s.handleSSHOldLink)
			mux.Handle("POST /ssh", s.authed(actRoute, s.handleSSHCode))
			mux.Handle("POST /ssh/decide", s.authed(actRoute, s.handleSSHDecide))
			mux.Handle("POST /ssh/keys/forget", s.authed(actRoute, s.handleSSHForgetForm))
		}
		mux.Handle("GET /api/keys", s.authed(readRoute, s.handleKeysList))
		mux.Handle("POST /api/keys/forget", s.authed(actRoute, s.handleKeysForget))
	}
	mux.HandleFunc("POST /api/logout", s.handleLogout)
	mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API endpoint")
	})
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.Handle("GET /readyz", s.authed(readRoute, s.handleReadyz))
	mux.Handle("GET /metrics", s.authed(readRoute, s.handleMetrics))
	page := s.cfg.Page
	if page == nil {
		page = placeholderPage()
	}
	mux.Handle("GET /", page)
	// Outermost first: headers on every answer, the 429s included; the
	// rate limit before anything costs more than a map lookup.
	return securityHeaders(s.limitRequests(s.limitBody(s.refuseTokensInURL(mux))))
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on l until Shutdown (over TLS when Config.TLS
// is set); like http.Server.Serve it then returns http.ErrServerClosed.
func (s *Server) Serve(l net.Listener) error {
	l = &limitedListener{Listener: l, l: s.limits, plain: s.http.TLSConfig == nil, refuse: s.refusedConn}
	if s.http.TLSConfig != nil {
		return s.http.ServeTLS(l, "", "")
	}
	return s.http.Serve(l)
}

// refusedConn logs a connection refused by the caps: the first of a burst
// at Warn, the rest at Debug.
func (s *Server) refusedConn(addr string) {
	now := time.Now()
	s.mu.Lock()
	warn := now.Sub(s.lastRefusal) > time.Minute
	if warn {
		s.lastRefusal = now
	}
	s.mu.Unlock()
	level := slog.LevelDebug
	if warn {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "HTTP connection refused: too many connections from its address or in total (more are logged at debug level for a minute)",
		"remote", addr, "max_per_address", s.cfg.MaxConnsPerAddr, "max", s.cfg.MaxConns)
}

// TLS reports whether Serve speaks HTTPS.
func (s *Server) TLS() bool { return s.http.TLSConfig != nil }

// Shutdown stops accepting, tells every attached WebSocket client that the
// gateway is shutting down (an error event, then a 1001 close; 1012 for a
// durable session's client, see restart.go), waits for
// in-flight requests and for every connection's goroutines. When ctx ends
// first it closes the remaining connections, waits for their goroutines
// (which then end at once) and returns ctx.Err(). Sessions are not touched:
// shutting down the Registry is the caller's job.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		if s.stopSignins != nil {
			close(s.stopSignins)
		}
	})
	s.signinsDone.Wait()
	s.mu.Lock()
	s.closed = true
	conns := s.snapshotLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.end(c.shutdownEnd())
	}
	err := s.http.Shutdown(ctx)
	s.limits.waitRefusals() // each within refuseLinger

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	conns = s.snapshotLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
	<-done
	return ctx.Err()
}

const msgShuttingDown = "gateway is shutting down"

func (s *Server) snapshotLocked() []*conn {
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// track registers an upgraded connection; it returns false once Shutdown
// has begun.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) connID() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

// upgradeOriginOK is the upgrader's CheckOrigin: the same rule authed
// already applied, checked again where gorilla expects it.
func (s *Server) upgradeOriginOK(r *http.Request) bool {
	c, ok := callerFrom(r.Context())
	return ok && s.origins.check(r, c.method == byCookie) == nil
}

// connCount is how many WebSocket connections are being served.
func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
