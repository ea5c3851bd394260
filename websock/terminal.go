package websock

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// handleTerminal serves GET /api/instances/{name}/terminal: every check
// that can fail with an HTTP status runs before the upgrade, the attach
// included, so a client never gets a WebSocket that closes at once.
//
// The same GET without the upgrade runs the same checks and answers why
// the attach would be refused (Registry.CheckAttach), or 400 when it
// would not: a browser cannot read a failed handshake's status, so the
// page asks this way after one fails.
func (s *Server) handleTerminal(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	name, ok := s.decide(w, r, c, audit.Attach, keys.Watch)
	if !ok {
		return
	}
	upgrade := websocket.IsWebSocketUpgrade(r)
	opts, err := attachOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	name, err = sessionAddr(r, name) // name=: a named session of the instance
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// login=: the instance user (the one decision's login column).
	login, ref := c.access.DecideLogin(r.URL.Query().Get("login"))
	if ref != nil {
		who := s.who(r, c)
		who.Login = truncateRunes(r.URL.Query().Get("login"), 64)
		s.cfg.Audit.Event(audit.Attach, who, instanceOf(name), "", "result", "denied", "reason", ref.Reason)
		writeError(w, http.StatusForbidden, ref.Message)
		return
	}
	opts.Login = login
	if s.isClosed() {
		writeError(w, http.StatusServiceUnavailable, msgShuttingDown)
		return
	}
	id := s.connID()
	opts.Label = fmt.Sprintf("websocket#%d %s (%s)", id, r.RemoteAddr, c.id.Name)
	opts.Allowed = s.allowedFor(c)
	opts.Who, opts.Via, opts.Remote, opts.ReadOnly = c.id.Name, "websocket", r.RemoteAddr, c.access.Decide(keys.Type) != nil
	if !upgrade {
		if err := s.cfg.Registry.CheckAttach(r.Context(), name, opts); err != nil {
			status, msg := s.attachFailure(r.Context(), name, err)
			writeError(w, status, msg)
			return
		}
		writeError(w, http.StatusBadRequest, "this endpoint needs a WebSocket upgrade (the attach itself would be accepted)")
		return
	}
	client, err := s.cfg.Registry.Attach(r.Context(), name, opts)
	if err != nil {
		status, msg := s.attachFailure(r.Context(), name, err)
		writeError(w, status, msg)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil { // the upgrader has answered with an HTTP error
		client.Detach()
		s.log.Debug("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	// Short context: via and who; the lines name the instance, the audit
	// trail keeps the address. conn numbers the debug lines of one socket.
	log := s.log.With("via", "web", "who", c.id.Name)
	log.Debug("websocket opened", "conn", id, "remote", r.RemoteAddr, "instance", name)
	cn := newConn(s, r.Context(), ws, name, resetBy(c), opts, log)
	cn.who = s.who(r, c)
	cn.who.Login = login
	cn.wantClients = r.URL.Query().Get("clients") == "1"
	cn.caller = c
	if !s.track(cn) {
		cn.refuse(client, msgShuttingDown)
		return
	}
	defer s.untrack(cn)
	cn.run(client)
}

// attachOptions reads the attach query: cols and rows (both or neither,
// each 1..MaxDim), session and since (resume).
func attachOptions(q url.Values) (sessions.AttachOptions, error) {
	var opts sessions.AttachOptions
	cols, rows := q.Has("cols"), q.Has("rows")
	if cols != rows {
		return opts, errors.New("give both cols and rows, or neither")
	}
	if cols {
		c, err1 := strconv.Atoi(q.Get("cols"))
		r, err2 := strconv.Atoi(q.Get("rows"))
		if err1 != nil || err2 != nil {
			return opts, errors.New("cols and rows must be integers")
		}
		opts.Size = sessions.Size{Cols: c, Rows: r}
		if !opts.Size.Valid() {
			return opts, sizeError(opts.Size)
		}
	}
	if q.Has("session") {
		opts.Session = q.Get("session")
		if opts.Session == "" || len(opts.Session) > 64 {
			return opts, errors.New("session must be a session id from an attached or reset event")
		}
	}
	if q.Has("since") {
		if opts.Session == "" {
			return opts, errors.New("since needs session")
		}
		n, err := strconv.ParseInt(q.Get("since"), 10, 64)
		if err != nil || n < 0 {
			return opts, errors.New("since must be a byte offset (a non-negative integer)")
		}
		opts.Since = n
	}
	return opts, nil
}
