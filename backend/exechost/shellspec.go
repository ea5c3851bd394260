package exechost

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/termgate/termgate/internal/names"
	"github.com/termgate/termgate/sessions"
)

// defaultTerm is the TERM a shell or a command's TTY gets when its
// client's is missing or not a plain terminal name.
const defaultTerm = "xterm-256color"

var termPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$`)

// shellSpec is what Start derives from a sessions.StartSpec before it
// starts a marked shell.
type shellSpec struct {
	marker string // the value of EnvSession: GATEWAYID.SESSION, or SESSION
	term   string
	size   sessions.Size
	// agentSock is SSH_AUTH_SOCK's value when the session has an agent
	// socket (sessions.StartSpec.Agent), else "".
	agentSock string
}

// env is the shell's environment besides its marker.
func (sh shellSpec) env() []string {
	env := []string{"TERM=" + sh.term}
	if sh.agentSock != "" {
		env = append(env, "SSH_AUTH_SOCK="+sh.agentSock)
	}
	return env
}

// forStart checks spec and derives the shell's marker, TERM and size (a
// zero size is the default size) for a gateway with the given id.
func forStart(gatewayID, instance string, spec sessions.StartSpec) (shellSpec, error) {
	if !names.ValidSessionID(spec.SessionID) {
		return shellSpec{}, fmt.Errorf("start shell in %q: invalid session id %q", instance, spec.SessionID)
	}
	sh := shellSpec{marker: spec.SessionID, term: termOrDefault(spec.Term)}
	if gatewayID != "" {
		sh.marker = gatewayID + "." + spec.SessionID
	}
	size, err := ttySize(spec.Size)
	if err != nil {
		return shellSpec{}, fmt.Errorf("start shell in %q: %w", instance, err)
	}
	sh.size = size
	if spec.Agent {
		sh.agentSock = sessions.AgentSocket(spec.SessionID)
	}
	return sh, nil
}

// ttySize is the size a TTY exec starts with: size, or the default size
// for a zero one; an error wrapping sessions.ErrBadSize when it is out of
// range.
func ttySize(size sessions.Size) (sessions.Size, error) {
	if size.IsZero() {
		size = sessions.DefaultSize
	}
	if !size.Valid() {
		return sessions.Size{}, fmt.Errorf("%dx%d: %w", size.Cols, size.Rows, sessions.ErrBadSize)
	}
	return size, nil
}

// termOrDefault is term when it is a plain terminal name, else defaultTerm.
func termOrDefault(term string) string {
	if !termPattern.MatchString(term) {
		return defaultTerm
	}
	return term
}

// clientEnv is what of a client's environment (sessions.StartSpec.Env) a
// shell gets: NAME=VALUE entries whose name no TERMGATE_ marker or TERM
// is (the gateway's own win, whatever the caller checked).
func clientEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if ok && name != "" && name != "TERM" && !strings.HasPrefix(name, "TERMGATE_") && !strings.ContainsRune(kv, 0) {
			out = append(out, kv)
		}
	}
	return out
}
