package websock

import (
	"errors"
	"io/fs"
	"net/http"
	"os"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/record"
	"github.com/termgate/termgate/sessions"
)

const msgNoRecording = "no such recording (recordings are off, or the session was not recorded)"

// handleRecording serves GET /api/recordings/{name}/{session}: the
// session's asciicast file, to callers allowed on the instance; its input
// events only to callers that may type into it (keys.Identity.MayWrite). A caller
// not allowed gets the unknown-instance 404 (instanceFor) before the file
// is looked at, so a limited token cannot learn that a recording exists.
func (s *Server) handleRecording(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	name, ok := s.decide(w, r, c, audit.Recording, keys.Watch)
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
	// A live session's recording is its instance's under the name it has
	// now: after a rename, a caller allowed on the old name only must not
	// read what the renamed instance prints (the recording moves to the
	// new name's directory; until it has, it is read where it still is).
	paths := []string{name}
	if cur, live := s.sessionInstance(session); live && cur != name {
		if !c.id.May(cur) {
			s.log.Warn("recording refused: its session's instance was renamed out of this credential's reach", "via", "http", "who", c.id.Name, "instance", name, "now", cur, "session", session)
			s.auditFailure(r, c, name, "recording of an instance renamed out of reach")
			writeError(w, http.StatusNotFound, sessions.NotFoundMessage(name))
			return
		}
		paths = []string{cur, name}
		name = cur
	}
	f, err := openRecording(s.cfg.RecordDir, paths, session)
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
	s.log.Debug("recording served", "remote", r.RemoteAddr, "who", c.id.Name, "instance", name, "session", session) // the audit trail has it
	s.cfg.Audit.Event(audit.Recording, s.who(r, c), name, session, "result", "served")
	w.Header().Set("Content-Type", "application/x-asciicast")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+"-"+session+`.cast"`)
	// Cache-Control no-store comes with every response (harden.go).
	if c.access.Decide(keys.RecordedInput) != nil {
		// Recorded input (--record-input) is what writers typed, at
		// prompts that do not echo too: an observer gets the recording
		// without it, whole (no ranges: the length is not known ahead).
		w.Header().Set("Last-Modified", fi.ModTime().UTC().Format(http.TimeFormat))
		if r.Method == http.MethodHead {
			return
		}
		if _, err := record.CopyWithoutInput(w, f); err != nil {
			s.log.Debug("recording not served whole", "instance", name, "session", session, "err", err)
		}
		return
	}
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// sessionInstance returns the current instance name of the live session id.
func (s *Server) sessionInstance(id string) (string, bool) {
	for _, in := range s.cfg.Registry.Sessions() {
		if in.Session == id {
			return in.Instance, true
		}
	}
	return "", false
}

// openRecording opens the session's recording under the first of the
// instance names it is found under.
func openRecording(dir string, names []string, session string) (f *os.File, err error) {
	for _, n := range names {
		if f, err = record.Open(dir, n, session); !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	return f, err
}
