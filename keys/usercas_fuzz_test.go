package keys

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/names"
)

// FuzzParseUserCAs parses arbitrary trusted user CA files. Whatever comes
// before them, a CA line makes its certificates valid and an @revoked line
// for the CA refuses them: no line can break or undo the lines after it.
func FuzzParseUserCAs(f *testing.F) {
	ca := testSigner(f, 100)
	user, userLine := testKey(f, 1)
	cert := testCert(f, user, ca, nil)
	caText := caLine(f, ca)
	certText := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(cert)))
	for _, s := range []string{
		"",
		"# comment\n\n",
		caText + " corp-ca\n",
		"cert-authority,from=\"10.0.0.0/8\" " + caText,
		"@revoked " + userLine + "\n" + caText,
		"@revoked\t" + certText + "\r\n@revoked garbage\n@cert-authority * " + caText,
		"@\n@revoked\n@revoked \n" + certText,
		"ssh-ed25519 AAAA\nnot a key\n\x00\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cas, warnings := ParseUserCAs(data)
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, w := range warnings {
			rest, ok := strings.CutPrefix(w, "line ")
			n, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, ':'))])
			if !ok || err != nil || n < 1 || n > lines {
				t.Fatalf("warning %q does not name a line of %d", w, lines)
			}
		}
		if cas.Len() > lines {
			t.Fatalf("Len %d > %d lines", cas.Len(), lines)
		}
		for k := range cas.trusted {
			if _, err := gossh.ParsePublicKey([]byte(k)); err != nil {
				t.Fatalf("trusted key does not parse: %v", err)
			}
		}

		with := append(append(bytes.Clone(data), '\n'), caText...)
		cas, _ = ParseUserCAs(with)
		_, err := cas.AuthorizeCertAt(cert, tcp("192.0.2.1"), certAt)
		if cas.isRevoked(cert) != (err != nil) {
			t.Fatalf("CA line after the fuzzed text: revoked=%v, AuthorizeCertAt error %v", cas.isRevoked(cert), err)
		}
		revoked := append(append(with, "\n@revoked "...), caText...)
		cas, _ = ParseUserCAs(revoked)
		if _, err := cas.AuthorizeCertAt(cert, tcp("192.0.2.1"), certAt); err == nil {
			t.Fatal("a certificate of a revoked CA was accepted")
		}
	})
}

// FuzzAuthorizeCert signs certificates with fuzzed principals, key ID,
// options, type and validity by a trusted CA and checks what an accepted
// one grants.
func FuzzAuthorizeCert(f *testing.F) {
	ca := testSigner(f, 100)
	user, _ := testKey(f, 1)
	cas, _ := ParseUserCAs([]byte(caLine(f, ca)))
	f.Add("web-*", "alice", "", "", "permit-pty", uint8(1), int64(-60), int64(60))
	f.Add("db1\n[!x]*", "", "source-address", "192.0.2.0/24", "", uint8(1), int64(-1), int64(1))
	f.Add("*", "bob\x1b[31m", "force-command", "list", "permit-pty", uint8(1), int64(-60), int64(60))
	f.Add("a/b\nweb", "x", "source-address", "10.0.0.0/8,garbage", "permit-X11-forwarding", uint8(2), int64(0), int64(0))
	f.Add("[", "", "", "", "", uint8(1), int64(1), int64(-1))
	f.Fuzz(func(t *testing.T, principals, keyID, critName, critValue, ext string, certType uint8, after, before int64) {
		c := &gossh.Certificate{
			Key:             user,
			CertType:        uint32(certType),
			KeyId:           keyID,
			ValidPrincipals: strings.Split(principals, "\n"),
			ValidAfter:      uint64(certAt.Unix() + after),
			ValidBefore:     uint64(certAt.Unix() + before),
			Permissions:     gossh.Permissions{CriticalOptions: map[string]string{}, Extensions: map[string]string{}},
		}
		if critName != "" {
			c.CriticalOptions[critName] = critValue
		}
		if ext != "" {
			c.Extensions[ext] = ""
		}
		if err := c.SignCert(zeroReader{}, ca); err != nil {
			return // empty principals: not a certificate anyone can sign
		}
		id, err := cas.AuthorizeCertAt(c, tcp("192.0.2.1"), certAt)
		if err != nil {
			if id.Name != "" || g(id).Instances != nil {
				t.Fatalf("refused (%v) but returned %+v", err, id)
			}
			return
		}
		now := uint64(certAt.Unix())
		switch {
		case c.CertType != gossh.UserCert:
			t.Fatalf("accepted certificate type %d", c.CertType)
		case now < c.ValidAfter || (c.ValidBefore != gossh.CertTimeInfinity && now >= c.ValidBefore):
			t.Fatalf("accepted outside [%d, %d) at %d", c.ValidAfter, c.ValidBefore, now)
		case critName != "" && critName != "source-address":
			t.Fatalf("accepted critical option %q", critName)
		case len(g(id).Instances) != len(c.ValidPrincipals):
			t.Fatalf("instances %q from principals %q", g(id).Instances, c.ValidPrincipals)
		case g(id).NoPTY != (ext != "permit-pty"):
			t.Fatalf("NoPTY %v with extension %q", g(id).NoPTY, ext)
		case displayName(id.Name, 1000) != id.Name || id.Name == "":
			t.Fatalf("name %q", id.Name)
		}
		wellFormed(t, g(id).Instances)
		// A principal that is an instance name grants that instance; a name
		// outside the contract is never granted.
		for _, p := range c.ValidPrincipals {
			if names.Valid(p) && !id.May(p) {
				t.Fatalf("principal %q does not grant itself (instances %q)", p, g(id).Instances)
			}
		}
		for _, bad := range []string{"", "../etc", "-x", ".x", "a/b"} {
			if id.May(bad) {
				t.Fatalf("May(%q) with instances %q", bad, g(id).Instances)
			}
		}
	})
}

// zeroReader is a deterministic nonce source for signing in the fuzzer.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
