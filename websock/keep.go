package websock

import (
	"errors"
	"net/http"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// handleKeep serves POST /api/instances/{name}/keep?for=8h (for=off ends
// the keep): the session is not reaped for that long with no client
// attached, up to --max-keep. 200 {"instance","keep_until"};
// 400 a bad duration or one over --max-keep; 403 a read-only token; 404
// no such instance, or no session.
func (s *Server) handleKeep(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	name, ok := s.decide(w, r, c, audit.Keep, keys.Keep, "keep", clipText(r.URL.Query().Get("for"), 32))
	if !ok {
		return
	}
	arg := r.URL.Query().Get("for")
	d, err := time.ParseDuration(arg)
	if arg == "off" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		writeError(w, http.StatusBadRequest, `"for" must be a duration such as 8h or 90m, or off`)
		return
	}
	if name, err = sessionAddr(r, name); err != nil { // name=: a named session
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	until, err := s.cfg.Registry.Keep(r.Context(), name, d)
	if tooLong := (*sessions.KeepTooLongError)(nil); errors.As(err, &tooLong) {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		status, msg := s.attachFailure(r.Context(), name, err)
		writeError(w, status, msg)
		return
	}
	inst, detail := sessions.AuditAddr(name, "keep", d.String(), "result", "ok")
	s.cfg.Audit.Event(audit.Keep, s.who(r, c), inst, "", detail...)
	out := map[string]any{"instance": inst, "keep_until": nil}
	if !until.IsZero() {
		out["keep_until"] = until.UTC()
	}
	writeJSON(w, http.StatusOK, out)
}
