package websock

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

// maxMessage is the largest WebSocket message a client may send (contract:
// larger ones close the connection with status 1009).
const maxMessage = 1 << 20

// Config configures a Server; New fills in the defaults.
type Config struct {
	// Registry is the shared session registry (required).
	Registry *sessions.Registry
	// Tokens checks bearer tokens (required).
	Tokens TokenChecker
	// AllowedOrigins are browser origins ("https://example.com:8443")
	// allowed besides the request's own origin.
	AllowedOrigins []string
	// Logger receives the server's logs (default: discard).
	Logger *slog.Logger
	// Metrics is served at GET /metrics (to authenticated callers); nil
	// answers 404.
	Metrics http.Handler
	// Page is served at GET / and below (without authentication: it is the
	// page that logs in); nil serves a minimal placeholder page at / only.
	Page http.Handler

	// LoginTTL is how long a browser login cookie stays valid (default 12h);
	// MaxLogins bounds the live logins kept (default 10000; the oldest is
	// dropped when a new one would exceed it).
	LoginTTL  time.Duration
	MaxLogins int
	// WriteTimeout bounds every WebSocket write (default 10s). PingInterval
	// is how often the server pings (default 25s); PongTimeout is how long
	// a connection may stay silent, pongs included, before it is dropped
	// (default 60s).
	WriteTimeout, PingInterval, PongTimeout time.Duration
}

// Server is the HTTP and WebSocket listener. Its handler can also be
// mounted elsewhere (Handler); Shutdown ends the WebSocket connections in
// either case.
type Server struct {
	cfg      Config
	log      *slog.Logger
	origins  origins
	logins   *logins
	upgrader websocket.Upgrader
	handler  http.Handler
	http     *http.Server

	mu     sync.Mutex // guards conns, closed and nextID
	conns  map[*conn]struct{}
	closed bool
	nextID uint64
	wg     sync.WaitGroup // one per tracked connection
}

// New checks cfg, fills in defaults and builds the routes.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil {
		return nil, errors.New("websock: no session registry")
	}
	if cfg.Tokens == nil {
		return nil, errors.New("websock: no token checker")
	}
	o, err := newOrigins(cfg.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.LoginTTL <= 0 {
		cfg.LoginTTL = 12 * time.Hour
	}
	if cfg.MaxLogins <= 0 {
		cfg.MaxLogins = 10000
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.PongTimeout <= 0 {
		cfg.PongTimeout = 60 * time.Second
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 25 * time.Second
	}
	if cfg.PingInterval >= cfg.PongTimeout {
		return nil, errors.New("websock: PingInterval must be shorter than PongTimeout")
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		origins: o,
		logins:  newLogins(cfg.LoginTTL, cfg.MaxLogins, time.Now),
		conns:   map[*conn]struct{}{},
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.WriteTimeout,
		CheckOrigin:      s.upgradeOriginOK,
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			writeError(w, status, "websocket handshake: "+reason.Error())
		},
	}
	s.handler = s.routes()
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /api/instances/{name}/terminal", s.authed(true, s.handleTerminal))
	mux.Handle("POST /api/instances/{name}/terminal/reset", s.authed(true, s.handleReset))
	mux.Handle("GET /api/sessions", s.authed(false, s.handleSessions))
	mux.HandleFunc("POST /api/login", s.handleLogin)
	mux.HandleFunc("POST /api/logout", s.handleLogout)
	mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API endpoint")
	})
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.Handle("GET /readyz", s.authed(false, s.handleReadyz))
	mux.Handle("GET /metrics", s.authed(false, s.handleMetrics))
	page := s.cfg.Page
	if page == nil {
		page = placeholderPage()
	}
	mux.Handle("GET /", page)
	return commonHeaders(mux)
}

// commonHeaders sets the headers every response gets.
func commonHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on l until Shutdown; like http.Server.Serve it
// then returns http.ErrServerClosed.
func (s *Server) Serve(l net.Listener) error { return s.http.Serve(l) }

// Shutdown stops accepting, tells every attached WebSocket client that the
// gateway is shutting down (an error event, then a 1001 close), waits for
// in-flight requests and for every connection's goroutines. When ctx ends
// first it closes the remaining connections, waits for their goroutines
// (which then end at once) and returns ctx.Err(). Sessions are not touched:
// shutting down the Registry is the caller's job.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	conns := s.snapshotLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.end(errorFrame(msgShuttingDown), websocket.CloseGoingAway)
	}
	err := s.http.Shutdown(ctx)

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
