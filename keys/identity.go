package keys

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/termgate/termgate/internal/names"
)

// Identity is who a credential belongs to and what it may do.
type Identity struct {
	// Name is what logs and listings show: the key's comment or, without
	// one, its fingerprint; for a token its NAME or "token-N" (N counts the
	// file's tokens from 1).
	Name string
	// Fingerprint is the SSH key's "SHA256:..." fingerprint; empty for
	// tokens.
	Fingerprint string
	// Instances are path.Match patterns limiting the instances this
	// identity may attach to or reset; empty means every instance.
	Instances []string
	// NoPTY is set by the no-pty or restrict options: the SSH layer must
	// refuse interactive attach for this key.
	NoPTY bool
	// ReadOnly is set by the option read-only (authorized_keys and token
	// file) and the certificate extension termgate-read-only: the client
	// is an observer ("Observers and recordings" in the contract): the
	// listeners attach it with sessions.AttachOptions.ReadOnly, so its
	// input and window size never reach the shell, and refuse its resets.
	// It combines with Instances.
	ReadOnly bool
	// NoPortForwarding refuses direct-tcpip channels (ssh -L, -D, -W):
	// set by the authorized_keys options no-port-forwarding and restrict
	// (port-forwarding clears it, as in OpenSSH), and for a certificate
	// without the permit-port-forwarding extension.
	NoPortForwarding bool
	// PermitOpen are the targets of the authorized_keys option
	// permitopen="HOST:PORT", as "HOST:PORT" (net.JoinHostPort: an IPv6
	// address in brackets; "*" as HOST or PORT matches any). Empty: any
	// target. See MayOpen.
	PermitOpen []string
	// Grants, when set (identities signed in through Policies), replace
	// Instances: the identity may use an instance one of them covers, and
	// For says whether read-only there.
	Grants []Grant
}

// MayOpen reports whether the identity's permitopen= list lets a forwarded
// connection reach host:port. As in OpenSSH, host is compared literally
// (no pattern matching, no name lookup, case-sensitive: "localhost" is not
// "127.0.0.1"), an IPv6 address without its brackets; "*" matches any host
// or port. It does not look at NoPortForwarding.
func (id Identity) MayOpen(host string, port int) bool {
	if len(id.PermitOpen) == 0 {
		return true
	}
	want := strconv.Itoa(port)
	for _, p := range id.PermitOpen {
		h, pt, err := net.SplitHostPort(p)
		if err != nil {
			continue // cannot happen: parsePermitOpen wrote it
		}
		if (h == "*" || h == host) && (pt == "*" || pt == want) {
			return true
		}
	}
	return false
}

// May reports whether the identity may use the instance. Names outside the
// contract's syntax are always refused; a malformed pattern matches nothing.
func (id Identity) May(instance string) bool {
	if !names.Valid(instance) {
		return false
	}
	if len(id.Grants) > 0 {
		return slices.ContainsFunc(id.Grants, func(g Grant) bool { return covers(g.Instances, instance) })
	}
	return covers(id.Instances, instance)
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

// MayWrite reports whether the identity may type into the instance: it
// may use it and is not an observer (read-only). What was typed (recorded
// input, say) is for such identities only: an observer never sees input
// the shell did not echo.
func (id Identity) MayWrite(instance string) bool {
	return !id.For(instance).ReadOnly && id.May(instance)
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
