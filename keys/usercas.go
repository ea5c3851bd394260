package keys

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// Reasons AuthorizeCert refuses a certificate; the returned errors wrap them
// with the certificate's key fingerprint, serial and the detail.
var (
	// ErrCertUntrusted: the certificate is not signed by a CA in the file.
	ErrCertUntrusted = errors.New("certificate is not signed by a trusted user CA")
	// ErrCertRevoked: the certificate's key or its CA is listed @revoked.
	ErrCertRevoked = errors.New("certificate is revoked")
	// ErrCertInvalid: a trusted CA signed it, but it is not valid here and
	// now (host certificate, expired, not yet valid, bad signature, no or
	// malformed principals, an unsupported critical option, source-address
	// refusing the client).
	ErrCertInvalid = errors.New("certificate is not valid")
)

// sourceAddress is the one critical option termgate understands (and
// enforces); a certificate with any other (force-command, verify-required,
// ...) is refused.
const sourceAddress = "source-address"

// CertReadOnly is the certificate extension that makes its holder an
// observer, like the authorized_keys and token option read-only.
const CertReadOnly = "termgate-read-only"

// UserCAs is a parsed --trusted-user-ca-keys file: the CA keys whose user
// certificates are accepted, and revoked keys. It is immutable; the zero
// value and nil trust no CA.
type UserCAs struct {
	trusted map[string]string // by key.Marshal(): the CA's name for logs
	revoked map[string]bool   // by key.Marshal()
}

// LoadUserCAs reads a trusted user CA file. A missing file trusts no CA
// (reported in warnings); err is set only when the file exists but cannot be
// read. Warnings are prefixed with the path.
func LoadUserCAs(path string) (*UserCAs, []string, error) {
	return loadTrustFile(path, "trusted user CA keys", "no user CA is trusted", &UserCAs{}, ParseUserCAs)
}

// ParseUserCAs parses a trusted user CA file: one CA public key per line in
// authorized_keys format ("ssh-ed25519 AAAA... comment"; the option
// cert-authority is allowed and changes nothing, any other option makes the
// line unusable), and "@revoked KEY" lines as in known_hosts: a certificate
// whose key or signing CA is revoked is refused (a certificate given as the
// revoked key revokes the key it certifies). Blank lines and # comments are
// skipped; bad lines are reported in warnings ("line N: ...") and never
// reject the rest of the file.
func ParseUserCAs(data []byte) (*UserCAs, []string) {
	cas := &UserCAs{trusted: map[string]string{}, revoked: map[string]bool{}}
	var warnings []string
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		text := bytes.TrimSpace(raw)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		if text[0] == '@' {
			end := bytes.IndexAny(text, " \t")
			if end < 0 {
				end = len(text)
			}
			marker, rest := text[:end], text[end:]
			if string(marker) != "@revoked" {
				warnings = append(warnings, fmt.Sprintf("line %d: skipped: unknown marker %q (only @revoked is understood)", n, displayName(string(marker), 40)))
				continue
			}
			key, _, _, _, err := gossh.ParseAuthorizedKey(bytes.TrimSpace(rest))
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("line %d: @revoked line skipped, NOTHING IS REVOKED by it: not a public key: %v", n, err))
				continue
			}
			if cert, ok := key.(*gossh.Certificate); ok {
				key = cert.Key
			}
			cas.revoked[string(key.Marshal())] = true
			continue
		}
		key, comment, opts, _, err := gossh.ParseAuthorizedKey(text)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("line %d: skipped, not a public key: %v", n, err))
			continue
		}
		fp := gossh.FingerprintSHA256(key)
		if _, ok := key.(*gossh.Certificate); ok {
			warnings = append(warnings, fmt.Sprintf("line %d: skipped %s: a certificate cannot be a CA", n, fp))
			continue
		}
		if bad := unsupportedCAOption(opts); bad != "" {
			warnings = append(warnings, fmt.Sprintf("line %d: skipped CA %s: unsupported option %q (a CA line may only carry cert-authority)", n, fp, displayName(bad, 40)))
			continue
		}
		name := displayName(comment, 64)
		if name == "" {
			name = fp
		}
		cas.trusted[string(key.Marshal())] = name
	}
	return cas, warnings
}

func unsupportedCAOption(opts []string) string {
	for _, o := range opts {
		if !strings.EqualFold(o, "cert-authority") {
			return o
		}
	}
	return ""
}

// Len is the number of trusted CAs.
func (c *UserCAs) Len() int {
	if c == nil {
		return 0
	}
	return len(c.trusted)
}

func (c *UserCAs) isTrusted(ca gossh.PublicKey) bool {
	if c == nil || ca == nil {
		return false
	}
	_, ok := c.trusted[string(ca.Marshal())]
	return ok
}

func (c *UserCAs) isRevoked(cert *gossh.Certificate) bool {
	if c == nil {
		return false
	}
	return c.revoked[string(cert.Key.Marshal())] ||
		(cert.SignatureKey != nil && c.revoked[string(cert.SignatureKey.Marshal())])
}

// AuthorizeCert checks a user certificate at the current time; see
// AuthorizeCertAt.
func (c *UserCAs) AuthorizeCert(cert *gossh.Certificate, remote net.Addr) (Identity, error) {
	return c.AuthorizeCertAt(cert, remote, time.Now())
}

// AuthorizeCertAt accepts cert when it is a user certificate signed by a
// trusted CA, neither it nor the CA is revoked, now is within
// [ValidAfter, ValidBefore), its only critical option is source-address and
// that allows the remote address, and it has at least one principal.
//
// The principals are the instances it may use: each one is an instance
// pattern as in instances= (web-*, db1, * for every instance). A certificate
// without principals, which OpenSSH would accept for any user, is refused.
// The SSH user name is not matched against the principals (it names the
// instance to attach to, or is any login name when a command is given; the
// instance is checked against the principals on every route).
//
// The identity's Name is the certificate's key ID, its Fingerprint the
// fingerprint of the certified key with the serial ("SHA256:... serial=N"),
// and NoPTY is set unless the certificate has the permit-pty extension (as
// in OpenSSH; ssh-keygen adds it unless told -O no-pty). ReadOnly is set by
// the extension termgate-read-only (ssh-keygen -O extension:termgate-read-only;
// an extension, not a critical option, since OpenSSH servers ignore
// extensions they do not know and the certificate stays usable elsewhere;
// its value is ignored). NoPortForwarding is set unless it has the
// permit-port-forwarding extension (ssh-keygen adds it unless told -O
// no-port-forwarding), NoAgentForwarding likewise unless it has
// permit-agent-forwarding. The error wraps
// ErrCertUntrusted, ErrCertRevoked or ErrCertInvalid and is meant for the
// log.
func (c *UserCAs) AuthorizeCertAt(cert *gossh.Certificate, remote net.Addr, now time.Time) (Identity, error) {
	if cert == nil || cert.Key == nil {
		return Identity{}, ErrCertInvalid
	}
	fp := gossh.FingerprintSHA256(cert.Key)
	label := fmt.Sprintf("certificate for %s serial %d (key ID %q)", fp, cert.Serial, displayName(cert.KeyId, 64))
	refuse := func(sentinel error, format string, args ...any) (Identity, error) {
		return Identity{}, fmt.Errorf("%s: %w: %s", label, sentinel, fmt.Sprintf(format, args...))
	}
	if cert.CertType != gossh.UserCert {
		return refuse(ErrCertInvalid, "not a user certificate (type %d)", cert.CertType)
	}
	if !c.isTrusted(cert.SignatureKey) {
		ca := "no key"
		if cert.SignatureKey != nil {
			ca = gossh.FingerprintSHA256(cert.SignatureKey)
		}
		return refuse(ErrCertUntrusted, "signed by %s", ca)
	}
	if c.isRevoked(cert) {
		return refuse(ErrCertRevoked, "its key or CA is listed @revoked")
	}
	if len(cert.ValidPrincipals) == 0 {
		return refuse(ErrCertInvalid, "it has no principals (termgate takes the instances from them)")
	}
	checker := gossh.CertChecker{
		SupportedCriticalOptions: []string{sourceAddress},
		IsUserAuthority:          c.isTrusted,
		IsRevoked:                c.isRevoked,
		Clock:                    func() time.Time { return now },
	}
	// CheckCert verifies the CA signature, the validity interval and the
	// critical options; principals are instance patterns here, not user
	// names, so it is given one of the certificate's own.
	if err := checker.CheckCert(cert.ValidPrincipals[0], cert); err != nil {
		return refuse(ErrCertInvalid, "%s", strings.TrimPrefix(err.Error(), "ssh: "))
	}
	if list, ok := cert.CriticalOptions[sourceAddress]; ok {
		if err := checkSourceAddress(list, remote); err != nil {
			return refuse(ErrCertInvalid, "%v", err)
		}
	}
	id := Identity{Name: displayName(cert.KeyId, 64), Fingerprint: fmt.Sprintf("%s serial=%d", fp, cert.Serial), Kind: KindCertificate}
	var g Grant
	if id.Name == "" {
		id.Name = fp
	}
	for _, p := range cert.ValidPrincipals {
		pat, err := parsePattern(p)
		if err != nil {
			return refuse(ErrCertInvalid, "principal %q is not an instance pattern: %v", displayName(p, 64), err)
		}
		g.Instances = append(g.Instances, pat)
	}
	_, pty := cert.Extensions["permit-pty"]
	_, g.ReadOnly = cert.Extensions[CertReadOnly]
	_, fwd := cert.Extensions["permit-port-forwarding"]
	_, agent := cert.Extensions["permit-agent-forwarding"]
	g.NoPTY, g.NoPortForwarding, g.NoAgentForwarding = !pty, !fwd, !agent
	id.Grants = []Grant{g}
	return id, nil
}

// checkSourceAddress enforces a certificate's source-address option: a
// comma-separated list of addresses and CIDR networks, one of which must
// hold the client's address. A list with a malformed entry refuses every
// address, also when another entry would match.
func checkSourceAddress(list string, remote net.Addr) error {
	shown := displayName(list, 200)
	var nets []netip.Prefix
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		var p netip.Prefix
		var err error
		if strings.Contains(e, "/") {
			p, err = netip.ParsePrefix(e)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(e); err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil || p.Addr().Zone() != "" {
			return fmt.Errorf("source-address %q: entry %q is not an address or network", shown, displayName(e, 64))
		}
		nets = append(nets, p.Masked())
	}
	ip, ok := clientIP(remote)
	if !ok {
		return fmt.Errorf("source-address %q: the client address has no IP", shown)
	}
	for _, p := range nets {
		if p.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("source-address %q does not allow %s", shown, ip)
}
