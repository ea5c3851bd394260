package sshd

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
)

// TestExpiringCertificateIsDisconnected: a certificate that expires while
// its user is attached disconnects the client at its ValidBefore, as a
// revocation does, with no reload to trigger a recheck.
func TestExpiringCertificateIsDisconnected(t *testing.T) {
	ca, _ := newSigner(t)
	user, _ := newSigner(t)
	cas := &swapCAs{}
	parsed, warnings := keys.ParseUserCAs(gossh.MarshalAuthorizedKey(ca.PublicKey()))
	if len(warnings) > 0 {
		t.Fatalf("CA file: %q", warnings)
	}
	cas.cur.Store(parsed)
	f := newFixture(t, func(c *Config) { c.UserCAs = cas })
	// Valid for 5–6 s (whole seconds): long enough to attach even on a
	// loaded CI machine, short enough for the test.
	validBefore := time.Unix(time.Now().Add(6*time.Second).Unix(), 0)
	cert := &gossh.Certificate{
		Key: user.PublicKey(), Serial: 8, CertType: gossh.UserCert, KeyId: "dave",
		ValidPrincipals: []string{"web*"},
		ValidAfter:      uint64(time.Now().Add(-time.Minute).Unix()), ValidBefore: uint64(validBefore.Unix()),
		Permissions: gossh.Permissions{Extensions: map[string]string{"permit-pty": ""}},
	}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewCertSigner(cert, user)
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.clientConfig("admin", "web1")
	cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(signer)}
	c, err := gossh.Dial("tcp", f.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tm := f.attachOn(t, c, 80, 24)
	tm.pid()
	if time.Now().After(validBefore) {
		t.Fatal("attaching took longer than the certificate's validity (a very loaded machine?)")
	}
	tm.revokedWithin(time.Until(validBefore) + revokeWithin)
	if !strings.Contains(tm.errOut.String(), "this certificate has expired") {
		t.Errorf("the notice does not say the certificate expired: %q", tm.errOut.String())
	}
}
