package keys

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"

	gossh "golang.org/x/crypto/ssh"
)

// Reasons Authorize refuses a key; the returned errors wrap them with the
// key's fingerprint and, where it helps, the client address and line.
var (
	// ErrUnknownKey: the key is on no line of the file.
	ErrUnknownKey = errors.New("public key is not authorized")
	// ErrFromMismatch: every line with the key has a from= that refuses
	// the client's address.
	ErrFromMismatch = errors.New("client address is not allowed by the key's from= option")
	// ErrKeyRefused: the first line reached for the key has an option
	// termgate cannot honour (command=, a malformed instances=, ...). It
	// fails closed: later lines with the same key are not tried, even when
	// the refused line's from= would not have matched.
	ErrKeyRefused = errors.New("key refused: its authorized_keys line has an option termgate cannot honour")
)

// AuthorizedKeys is a parsed authorized_keys file. It is immutable; the zero
// value and nil authorize nothing.
type AuthorizedKeys struct {
	byKey  map[string][]*keyLine // by key.Marshal(), lines in file order
	usable int
}

// keyLine is one line of the file whose key parsed.
type keyLine struct {
	line int
	id   Identity
	from *fromList // nil: any address
	// refused, when set, is why the line's options made it unusable: the
	// key is refused when this line is the first to apply.
	refused string
}

// LoadAuthorizedKeys reads an authorized_keys file. A missing file is an
// empty set (reported in warnings); err is set only when the file exists
// but cannot be read. Warnings are prefixed with the path.
func LoadAuthorizedKeys(path string) (*AuthorizedKeys, []string, error) {
	return loadTrustFile(path, "authorized keys", "no SSH key is authorized", &AuthorizedKeys{}, ParseAuthorizedKeys)
}

// loadTrustFile reads a file that grants access (authorized keys, user
// CAs, tokens): a missing one grants nothing and says so, and warnings are
// prefixed with the path. One that anyone but root and the gateway's user
// could change (see readTrustFile) is an error: it is not used.
func loadTrustFile[T any](path, what, missing string, empty T, parse func([]byte) (T, []string)) (T, []string, error) {
	data, _, pathWarnings, err := readTrustFile(path, what)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, append(pathWarnings, fmt.Sprintf("%s does not exist: %s", path, missing)), nil
	}
	if err != nil {
		var zero T
		return zero, nil, err
	}
	v, warnings := parse(data)
	for i, w := range warnings {
		warnings[i] = path + ": " + w
	}
	return v, append(pathWarnings, warnings...), nil
}

// ParseAuthorizedKeys parses the contents of an authorized_keys file line by
// line. Blank lines and # comments are skipped; a line that does not parse
// or carries an unsupported option is reported in warnings ("line N: ...")
// and never rejects the rest of the file.
func ParseAuthorizedKeys(data []byte) (*AuthorizedKeys, []string) {
	ak := &AuthorizedKeys{byKey: map[string][]*keyLine{}}
	var warnings []string
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		text := bytes.TrimSpace(raw)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		key, comment, opts, _, err := gossh.ParseAuthorizedKey(text)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("line %d: skipped, not a public key: %v", n, err))
			continue
		}
		fp := gossh.FingerprintSHA256(key)
		if _, ok := key.(*gossh.Certificate); ok {
			warnings = append(warnings, fmt.Sprintf("line %d: skipped %s: certificates are not supported", n, fp))
			continue
		}
		name := displayName(comment, 64)
		if name == "" {
			name = fp
		}
		kl := &keyLine{line: n, id: Identity{Name: name, Fingerprint: fp, Kind: KindKey}}
		o, optWarnings, err := parseOptions(opts)
		for _, w := range optWarnings {
			warnings = append(warnings, fmt.Sprintf("line %d (%s): %s", n, name, w))
		}
		if err != nil {
			kl.refused = err.Error()
			warnings = append(warnings, fmt.Sprintf("line %d (%s): %v: key %s is refused where this line applies", n, name, err, fp))
		} else {
			kl.from = o.from
			kl.id.Grants = []Grant{{Instances: o.instances, NoPTY: o.noPTY, ReadOnly: o.readOnly,
				NoPortForwarding: o.noPortForwarding, PermitOpen: o.permitOpen, PermitListen: o.permitListen, Files: o.files, Logins: o.logins,
				NoAgentForwarding: o.noAgentForwarding}}
			ak.usable++
		}
		k := string(key.Marshal())
		ak.byKey[k] = append(ak.byKey[k], kl)
	}
	return ak, warnings
}

// Len is the number of usable lines.
func (ak *AuthorizedKeys) Len() int {
	if ak == nil {
		return 0
	}
	return ak.usable
}

// Authorize returns the identity of the first line holding key whose from=
// (if any) allows the remote address, as OpenSSH does. A remote address
// without an IP (a pipe, a Unix socket) satisfies no from= option. The
// error wraps ErrUnknownKey, ErrFromMismatch or ErrKeyRefused; it is meant
// for the log, not for the client.
func (ak *AuthorizedKeys) Authorize(key gossh.PublicKey, remote net.Addr) (Identity, error) {
	if key == nil {
		return Identity{}, ErrUnknownKey
	}
	fp := gossh.FingerprintSHA256(key)
	if ak == nil {
		return Identity{}, fmt.Errorf("key %s: %w", fp, ErrUnknownKey)
	}
	lines := ak.byKey[string(key.Marshal())]
	if len(lines) == 0 {
		return Identity{}, fmt.Errorf("key %s: %w", fp, ErrUnknownKey)
	}
	ip, hasIP := clientIP(remote)
	for _, kl := range lines {
		if kl.refused != "" {
			return Identity{}, fmt.Errorf("key %s, line %d: %w (%s)", fp, kl.line, ErrKeyRefused, kl.refused)
		}
		if kl.from == nil || (hasIP && kl.from.match(ip)) {
			return kl.id.clone(), nil
		}
	}
	addr := "an address without an IP"
	if hasIP {
		addr = ip.String()
	}
	return Identity{}, fmt.Errorf("key %s from %s: %w", fp, addr, ErrFromMismatch)
}
