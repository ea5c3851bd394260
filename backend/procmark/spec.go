package procmark

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/termgate/termgate/sessions"
)

// DefaultTerm is the TERM a shell gets when its client's is missing or
// not a plain terminal name.
const DefaultTerm = "xterm-256color"

var (
	sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
	termPattern      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$`)
)

// ValidSessionID reports whether id may be part of a marker (KillScript
// matches markers as plain words).
func ValidSessionID(id string) bool { return sessionIDPattern.MatchString(id) }

// Shell is what every backend derives from a sessions.StartSpec before it
// starts a marked shell.
type Shell struct {
	Marker string // the value of EnvSession: GATEWAYID.SESSION, or SESSION
	Term   string
	Size   sessions.Size
}

// ForStart checks spec and derives the shell's marker, TERM and size (a
// zero size is the default size) for a gateway with the given id.
func ForStart(gatewayID, instance string, spec sessions.StartSpec) (Shell, error) {
	if !ValidSessionID(spec.SessionID) {
		return Shell{}, fmt.Errorf("start shell in %q: invalid session id %q", instance, spec.SessionID)
	}
	sh := Shell{Marker: spec.SessionID, Term: spec.Term, Size: spec.Size}
	if gatewayID != "" {
		sh.Marker = gatewayID + "." + spec.SessionID
	}
	if sh.Size.IsZero() {
		sh.Size = sessions.DefaultSize
	}
	if !sh.Size.Valid() {
		return Shell{}, fmt.Errorf("start shell in %q: %dx%d: %w", instance, sh.Size.Cols, sh.Size.Rows, sessions.ErrBadSize)
	}
	if !termPattern.MatchString(sh.Term) {
		sh.Term = DefaultTerm
	}
	return sh, nil
}

// Summary lists what a sweep ended for its log line: the sessions once
// each, and every process as PID/COMM.
func Summary(procs []Ended) (sessionIDs, pids []string) {
	seen := map[string]bool{}
	for _, p := range procs {
		pids = append(pids, strconv.Itoa(p.PID)+"/"+p.Comm)
		if p.Session != "" && !seen[p.Session] {
			seen[p.Session] = true
			sessionIDs = append(sessionIDs, p.Session)
		}
	}
	return sessionIDs, pids
}
