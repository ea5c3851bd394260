package keys

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
)

// Identity is who a credential belongs to and what it may do: its Grants,
// read by On (access.go), the one access decision.
type Identity struct {
	// Name is what logs and listings show: the key's comment or, without
	// one, its fingerprint; for a token its NAME or "token-N" (N counts the
	// file's tokens from 1); a signed-in identity's email.
	Name string
	// Fingerprint is the SSH key's "SHA256:..." fingerprint; empty for
	// tokens.
	Fingerprint string
	// Kind is the kind of credential, for the sentences that name it.
	Kind Kind
	// Grants are what it may do, by instance: one for a key, certificate
	// or token (its line's options), one per matching policy rule for a
	// signed-in identity.
	Grants []Grant
}

// clone copies the grants, so a caller may keep or change its Identity
// without touching the store's.
func (id Identity) clone() Identity {
	id.Grants = slices.Clone(id.Grants)
	for i := range id.Grants {
		g := &id.Grants[i]
		g.Instances, g.PermitOpen, g.PermitListen, g.Logins = slices.Clone(g.Instances), slices.Clone(g.PermitOpen), slices.Clone(g.PermitListen), slices.Clone(g.Logins)
	}
	return id
}

// Scope lists the instance patterns the identity covers, nil when one of
// its grants covers every instance (whoami, /metrics).
func (id Identity) Scope() []string {
	var out []string
	for _, g := range id.Grants {
		if len(g.Instances) == 0 {
			return nil
		}
		out = append(out, g.Instances...)
	}
	return out
}

// Everywhere reports whether one grant covers every instance.
func (id Identity) Everywhere() bool {
	return len(id.Grants) > 0 && id.Scope() == nil
}

// ReadOnlyEverywhere reports an observer on every instance it covers.
func (id Identity) ReadOnlyEverywhere() bool {
	for _, g := range id.Grants {
		if !g.ReadOnly {
			return false
		}
	}
	return true
}

// covers reports whether instance matches one of patterns; no patterns
// cover every instance.
func covers(patterns []string, instance string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, err := path.Match(p, instance); ok && err == nil {
			return true
		}
	}
	return false
}

// parseInstances parses the comma-separated value of instances=. Every
// pattern must be non-empty, well-formed for path.Match and free of '/'
// (instance names never contain one). Shell-style class negation "[!...]" is
// rewritten to path.Match's "[^...]".
func parseInstances(list string) ([]string, error) {
	if list == "" {
		return nil, fmt.Errorf("instances= is empty")
	}
	var pats []string
	for _, p := range strings.Split(list, ",") {
		if p == "" {
			return nil, fmt.Errorf("instances= has an empty pattern in %q", list)
		}
		p, err := parsePattern(p)
		if err != nil {
			return nil, fmt.Errorf("instances= %w", err)
		}
		pats = append(pats, p)
	}
	return pats, nil
}

// parsePattern checks one instance pattern: non-empty, free of '/' and
// well-formed for path.Match; "[!" is rewritten to "[^" (see
// shellClassNegation). It is shared by instances= options, token lines and
// certificate principals.
func parsePattern(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty pattern")
	}
	if strings.ContainsRune(p, '/') {
		return "", fmt.Errorf("pattern %q contains '/', which no instance name has", p)
	}
	p = shellClassNegation(p)
	if _, err := path.Match(p, ""); err != nil {
		return "", fmt.Errorf("pattern %q: %w", p, err)
	}
	return p, nil
}

// shellClassNegation rewrites "[!" at the start of a character class to
// "[^": shells negate with '!', path.Match with '^', and '!' never occurs in
// an instance name.
func shellClassNegation(p string) string {
	b := []byte(p)
	inClass := false
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case !inClass && b[i] == '[':
			inClass = true
			if i+1 < len(b) && b[i+1] == '!' {
				b[i+1] = '^'
				i++
			}
		case inClass && b[i] == ']':
			inClass = false
		}
	}
	return string(b)
}

// displayName makes untrusted text (a key comment, a token name) safe to
// show: control and other non-printable characters become '?', and the
// result is at most limit runes.
func displayName(s string, limit int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == limit {
			b.WriteString("…")
			break
		}
		if !unicode.IsPrint(r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Describe says in one line what the identity may do, grant by grant, for
// whoami: "every instance, read-write" for an unlimited key; "instances
// web*: read-write; db*: read-only" for a signed-in identity whose rules
// differ per instance.
func Describe(id Identity) string {
	var parts []string
	for _, g := range id.Grants {
		where := "every instance"
		if len(g.Instances) > 0 {
			where = "instances " + strings.Join(g.Instances, ",")
		}
		what := "read-write"
		if g.ReadOnly {
			what = "read-only"
		} else {
			if g.Files == FilesDownload {
				what += ", files download only"
			}
			if g.NoPortForwarding {
				what += ", no port forwarding"
			}
			if g.NoAgentForwarding {
				what += ", no agent forwarding"
			}
		}
		if g.NoPTY {
			what += ", no terminal"
		}
		what += describeLogins(g)
		parts = append(parts, where+": "+what)
	}
	if len(parts) == 0 {
		return "no access"
	}
	return strings.Join(parts, "; ")
}
