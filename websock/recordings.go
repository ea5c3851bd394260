package websock

import (
	"errors"
	"io/fs"
	"net/http"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/record"
)

const msgNoRecording = "no such recording (recordings are off, or the session was not recorded)"

// handleRecording serves GET /api/recordings/{name}/{session}: the
// session's asciicast file, to callers allowed on the instance. A caller
// not allowed gets the unknown-instance 404 (instanceFor) before the file
// is looked at, so a limited token cannot learn that a recording exists.
func (s *Server) handleRecording(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	name, ok := s.instanceFor(w, r, c)
	if !ok {
		return
	}
	session := r.PathValue("session")
	if err := record.CheckSession(session); err != nil {
		writeError(w, http.StatusBadRequest, "bad session ID: "+err.Error())
		return
	}
	if s.cfg.RecordDir == "" {
		writeError(w, http.StatusNotFound, msgNoRecording)
		return
	}
	f, err := record.Open(s.cfg.RecordDir, name, session)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("open recording", "instance", name, "session", session, "err", err)
		}
		s.cfg.Audit.Event(audit.Recording, s.who(r, c), name, session, "result", "not_found")
		writeError(w, http.StatusNotFound, msgNoRecording)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.log.Warn("stat recording", "instance", name, "session", session, "err", err)
		writeError(w, http.StatusNotFound, msgNoRecording)
		return
	}
	s.log.Info("recording served", "remote", r.RemoteAddr, "identity", c.id.Name, "instance", name, "session", session)
	s.cfg.Audit.Event(audit.Recording, s.who(r, c), name, session, "result", "served")
	w.Header().Set("Content-Type", "application/x-asciicast")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+"-"+session+`.cast"`)
	// Cache-Control no-store comes with every response (harden.go).
	http.ServeContent(w, r, "", fi.ModTime(), f)
}
