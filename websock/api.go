package websock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// handleReset serves POST /api/instances/{name}/terminal/reset.
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	// Before the rate limit: an observer spends no one's resets.
	name, ok := s.decide(w, r, c, audit.Reset, keys.Reset)
	if !ok {
		return
	}
	name, err := sessionAddr(r, name) // name=: a named session of the instance
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.allowReset(instanceOf(name), c); err != nil {
		s.log.Warn("reset refused: rate limit", "via", "http", "who", c.id.Name, "instance", name)
		tooMany(w, err.retry, err.Error())
		return
	}
	sess, err := s.cfg.Registry.ResetAs(r.Context(), name, resetBy(c), c.access.Login())
	if err != nil {
		status, msg := s.attachFailure(r.Context(), name, err)
		writeError(w, status, msg)
		return
	}
	s.log.Debug("session reset over HTTP", "remote", r.RemoteAddr, "who", c.id.Name, "instance", name, "session", sess.ID()) // the registry logs the info line
	inst, detail := sessions.AuditAddr(name)
	s.cfg.Audit.Event(audit.Reset, s.who(r, c), inst, sess.ID(), detail...)
	writeJSON(w, http.StatusOK, map[string]string{"instance": inst, "name": sess.Name(), "session": sess.ID()})
}

// handleSessions serves GET /api/sessions: the sessions the caller may use.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	out := []sessions.Info{}
	for _, in := range s.cfg.Registry.Sessions() {
		if c.id.May(in.Instance) {
			out = append(out, in)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// instanceEntry is one row of GET /api/instances: ReadOnly says that this
// caller may only watch the instance (a read-only token, or single sign-on
// policies that give only read-only access to it), so the page can say so
// before the row is opened.
type instanceEntry struct {
	sessions.InstanceInfo
	ReadOnly bool `json:"read_only"`
}

// handleInstances serves GET /api/instances: the running instances the
// caller may reach, each with its session (null when it has none).
func (s *Server) handleInstances(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	list, err := s.cfg.Registry.Instances(ctx, c.id.May)
	if err != nil {
		s.log.Warn("list instances", "err", err)
		writeError(w, http.StatusServiceUnavailable, "could not list instances: the backend did not answer")
		return
	}
	out := make([]instanceEntry, len(list))
	for i, in := range list {
		out[i] = instanceEntry{InstanceInfo: in, ReadOnly: !c.id.On(in.Name, s.cfg.Switches).Write}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz reports whether the backend answers within 5 seconds.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.cfg.Registry.Ready(ctx); err != nil {
		s.log.Warn("readiness check failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "backend unreachable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// handleMetrics serves GET /metrics to tokens without instances= limits
// only: the metrics name every instance with a session, when it was
// attached and how many bytes it wrote (a keystroke's echo is a byte), so a
// limited token would learn about instances it may not use. Filtering the
// Prometheus text would have to understand every metric's labels; a
// monitoring system wants a token of its own anyway.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	if !c.id.Everywhere() {
		s.log.Warn("metrics refused to a limited token", "via", "http", "who", c.id.Name)
		s.auditFailure(r, c, "", "metrics need a token without instances= limits")
		writeError(w, http.StatusForbidden, msgMetricsLimited)
		return
	}
	if s.cfg.Metrics == nil {
		writeError(w, http.StatusNotFound, "metrics are not enabled")
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}

const msgMetricsLimited = "/metrics shows every instance, and this token is limited by instances=: " +
	"use a token without instances= limits (for example a separate one for monitoring)"

// decide checks the {name} path value and makes the one access decision
// on it (the caller's keys.Access, from authed) for act: 400 for a bad
// name; 404, the unknown-instance answer so that names do not leak, for an
// instance the credential may not use; 403 with the refusal's sentence
// otherwise, audited as auditAction (with extra).
func (s *Server) decide(w http.ResponseWriter, r *http.Request, c caller, auditAction string, act keys.Action, extra ...any) (string, bool) {
	name := r.PathValue("name")
	if err := sessions.CheckName(name); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	ref := c.access.Decide(act)
	if ref == nil {
		return name, true
	}
	s.log.Warn("refused", "via", "http", "who", c.id.Name, "action", act.String(), "instance", name, "reason", ref.Reason)
	if ref.Hidden {
		s.auditFailure(r, c, name, ref.Reason)
		writeError(w, http.StatusNotFound, sessions.NotFoundMessage(name))
		return "", false
	}
	s.cfg.Audit.Event(auditAction, s.who(r, c), name, "", append(extra, "result", "denied", "reason", ref.Reason)...)
	writeError(w, http.StatusForbidden, ref.Message)
	return "", false
}

// attachFailure turns a Registry.Attach or Reset error into a status and a
// message for the user; the detail goes to the log.
func (s *Server) attachFailure(ctx context.Context, name string, err error) (int, string) {
	var revoked *sessions.RevokedError
	var tooMany *sessions.TooManySessionsError
	var badLogin *sessions.LoginError
	var wrongLogin *sessions.WrongLoginError
	var noShell *sessions.NoShellError
	switch {
	case errors.As(err, &badLogin), errors.As(err, &wrongLogin):
		return http.StatusForbidden, err.Error() // names the login to use
	case errors.As(err, &noShell):
		return http.StatusUnprocessableEntity, noShell.Error() // says what the instance lacks
	case errors.As(err, &revoked): // the token was removed between the check and the attach
		return http.StatusForbidden, revoked.Error()
	case errors.As(err, &tooMany):
		return http.StatusTooManyRequests, err.Error()
	case errors.Is(err, sessions.ErrNotFound):
		return http.StatusNotFound, sessions.NotFoundMessage(instanceOf(name))
	case errors.Is(err, sessions.ErrNothingToWatch):
		return http.StatusNotFound, sessions.NothingToWatchMessage(name)
	case errors.Is(err, sessions.ErrNoSession):
		return http.StatusNotFound, sessions.NoSessionMessage(name)
	case errors.Is(err, sessions.ErrPaused):
		return http.StatusConflict, sessions.PausedMessage(name)
	case errors.Is(err, sessions.ErrBadName), errors.Is(err, sessions.ErrBadSize), errors.Is(err, sessions.ErrBadSessionName):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, sessions.ErrClosed):
		return http.StatusServiceUnavailable, msgShuttingDown
	case ctx.Err() != nil:
		return http.StatusServiceUnavailable, "request cancelled"
	default:
		s.log.Warn("attach failed", "instance", name, "err", err)
		return http.StatusServiceUnavailable, fmt.Sprintf("cannot start or join the session of instance %q right now; see the gateway log", name)
	}
}

// allowReset applies the reset rate limits (nil when they are off).
func (s *Server) allowReset(instance string, c caller) *errTooManyResets {
	if s.resets == nil {
		return nil
	}
	return s.resets.allow(instance, c.tokenHash)
}

// resetBy names the caller in the notice attached clients get.
func resetBy(c caller) string {
	if c.id.Name == "" {
		return "a web client"
	}
	return c.id.Name + " (web)"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only plain maps and structs are written here
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
