package sshd

import (
	"fmt"
	"path"
	"strings"
)

// DefaultAcceptEnv is --accept-env's default: the locale, as OpenSSH's
// sshd_config ships it.
var DefaultAcceptEnv = []string{"LANG", "LC_*"}

// ParseAcceptEnv reads --accept-env: names or shell globs (path.Match),
// separated by spaces or commas; "" accepts nothing. A pattern that could
// let a client set a TERMGATE_ variable (the markers the gateway finds
// its processes by) is refused: such variables are never accepted.
func ParseAcceptEnv(s string) ([]string, error) {
	pats := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	out := []string{}
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--accept-env: %q is not a valid pattern: %v", p, err)
		}
		if strings.HasPrefix(p, "TERMGATE_") {
			return nil, fmt.Errorf("--accept-env: %q: TERMGATE_ variables are the gateway's markers and cannot be set by clients", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// acceptEnv reports whether a client may set name: TERM always (it is
// the terminal's), names that match one of the patterns otherwise, never
// a TERMGATE_ one or a name no shell could use.
func acceptEnv(patterns []string, name string) bool {
	if !validEnvName(name) || strings.HasPrefix(name, "TERMGATE_") {
		return false
	}
	if name == "TERM" {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// validEnvName: [A-Za-z_][A-Za-z0-9_]*, at most 128 bytes.
func validEnvName(n string) bool {
	if n == "" || len(n) > 128 || (n[0] >= '0' && n[0] <= '9') {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// shellEnv is what of a session's accepted env requests a new shell gets:
// all but TERM (the PTY request's).
func shellEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TERM=") {
			out = append(out, kv)
		}
	}
	return out
}
