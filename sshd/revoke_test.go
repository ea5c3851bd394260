package sshd

import (
	"crypto/rand"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
)

// revokeWithin is the contract's bound on revocation ("within 5 seconds").
const revokeWithin = 5 * time.Second

// setKeys replaces the authorized keys, as a reload of the file would:
// opts maps each fixture key that stays to its options.
func (f *fixture) setKeys(t *testing.T, opts map[string]string) {
	t.Helper()
	var ak strings.Builder
	for name, o := range opts {
		fmt.Fprintf(&ak, "%s%s %s\n", o, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(f.keys[name].PublicKey()))), name)
	}
	parsed, warnings := keys.ParseAuthorizedKeys([]byte(ak.String()))
	if len(warnings) > 0 {
		t.Fatalf("authorized_keys warnings: %v", warnings)
	}
	f.auth.set(parsed)
}

// revokedWithin waits for tm to be disconnected with the revocation
// notice: the notice on stderr, exit status 1 and the connection closed.
func (tm *term) revokedWithin(d time.Duration) {
	tm.t.Helper()
	select {
	case err := <-tm.done:
		tm.done <- err // for wait
	case <-time.After(d):
		tm.t.Fatalf("still attached %v after the revocation; stderr %q", d, tm.errOut.String())
	}
	if code := tm.wait(); code != 1 {
		tm.t.Errorf("exit status %d after the revocation, want 1", code)
	}
	if !strings.Contains(tm.errOut.String(), "[termgate] access revoked: ") {
		tm.t.Errorf("no revocation notice on stderr: %q", tm.errOut.String())
	}
	closed := make(chan error, 1)
	go func() { closed <- tm.client.Wait() }()
	select {
	case <-closed:
	case <-time.After(d):
		tm.t.Error("the connection of a revoked key stayed open")
	}
}

// TestRevokedKeyIsDisconnected is issue 9 item 2 over SSH: removing a key
// from authorized_keys, or narrowing its instances=, disconnects its
// attached clients at the next Recheck (cmd/termgate calls it after every
// reload) with a notice; clients of other keys stay.
func TestRevokedKeyIsDisconnected(t *testing.T) {
	f := newFixture(t, nil)
	web := f.attach(t, "web", "web1", 80, 24)
	web.pid()
	admin := f.attach(t, "admin", "web1", 80, 24)
	admin.pid()
	f.setKeys(t, map[string]string{"admin": "", "nopty": "no-pty "})
	start := time.Now()
	f.reg.Recheck()
	web.revokedWithin(revokeWithin)
	t.Logf("disconnected %v after the recheck", time.Since(start).Round(time.Millisecond))
	admin.send("echo still-$((1+1))")
	admin.expect("still-2")

	// A narrowed instances= limit revokes the instances it no longer covers.
	f.setKeys(t, map[string]string{"admin": "", "web": `instances="web*" `, "nopty": "no-pty "})
	web2 := f.attach(t, "web", "web2", 80, 24)
	web2.pid()
	f.setKeys(t, map[string]string{"admin": "", "web": `instances="web1" `, "nopty": "no-pty "})
	f.reg.Recheck()
	web2.revokedWithin(revokeWithin)
	eventually(t, "the revoked client to leave web2", func() bool { return clientsOf(f.reg, "web2") == 0 })
}

// TestResetDoesNotCarryRevokedClient: a key removed from authorized_keys
// (before any Recheck) is not moved into the fresh shell of a reset; the
// other client is.
func TestResetDoesNotCarryRevokedClient(t *testing.T) {
	f := newFixture(t, nil)
	web := f.attach(t, "web", "web1", 80, 24)
	web.pid()
	admin := f.attach(t, "admin", "web1", 80, 24)
	admin.pid()
	f.setKeys(t, map[string]string{"admin": "", "nopty": "no-pty "})
	if r := f.run(t, "admin", "me", "reset web1"); r.code != 0 {
		t.Fatalf("reset: %+v", r)
	}
	web.revokedWithin(revokeWithin)
	if strings.Contains(web.out.String(), "fresh shell") {
		t.Errorf("the revoked client was told it is in the fresh shell: %q", web.out.String())
	}
	admin.expect("fresh shell")
	admin.pid()
	if n := clientsOf(f.reg, "web1"); n != 1 {
		t.Errorf("%d clients in the new session, want 1 (admin)", n)
	}
}

// swapCAs lets a test change the trusted user CAs under a running server.
type swapCAs struct{ cur atomic.Pointer[keys.UserCAs] }

func (s *swapCAs) AuthorizeCert(cert *gossh.Certificate, remote net.Addr) (keys.Identity, error) {
	return s.cur.Load().AuthorizeCert(cert, remote)
}

// TestRevokedCertificateIsDisconnected: a certificate whose CA leaves the
// CA file, or whose key is listed @revoked, is disconnected at Recheck.
func TestRevokedCertificateIsDisconnected(t *testing.T) {
	cas := &swapCAs{}
	ca, _ := newSigner(t)
	user, _ := newSigner(t)
	load := func(data string) {
		t.Helper()
		parsed, warnings := keys.ParseUserCAs([]byte(data))
		if len(warnings) > 0 {
			t.Fatalf("CA file: %q", warnings)
		}
		cas.cur.Store(parsed)
	}
	caLine := string(gossh.MarshalAuthorizedKey(ca.PublicKey()))
	load(caLine)
	f := newFixture(t, func(c *Config) { c.UserCAs = cas })
	now := time.Now()
	cert := &gossh.Certificate{
		Key: user.PublicKey(), Serial: 7, CertType: gossh.UserCert, KeyId: "carol",
		ValidPrincipals: []string{"web*"},
		ValidAfter:      uint64(now.Add(-time.Minute).Unix()), ValidBefore: uint64(now.Add(time.Hour).Unix()),
		Permissions: gossh.Permissions{Extensions: map[string]string{"permit-pty": ""}},
	}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewCertSigner(cert, user)
	if err != nil {
		t.Fatal(err)
	}
	attach := func() *term {
		cfg := f.clientConfig("admin", "web1")
		cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(signer)}
		c, err := gossh.Dial("tcp", f.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		tm := f.attachOn(t, c, 80, 24)
		tm.pid()
		return tm
	}
	for _, tc := range []struct{ name, file string }{
		{"CA removed", ""},
		{"key revoked", caLine + "@revoked " + string(gossh.MarshalAuthorizedKey(user.PublicKey()))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			load(caLine)
			tm := attach()
			load(tc.file)
			f.reg.Recheck()
			tm.revokedWithin(revokeWithin)
		})
	}
}
