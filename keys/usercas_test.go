package keys

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/fileperm"
)

// certAt is the time the certificate tests check at.
var certAt = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// testCert returns a user certificate for key signed by ca: serial 7, key
// ID "alice", principal web-*, valid an hour either side of certAt,
// permit-pty. mutate runs before signing.
func testCert(t testing.TB, key gossh.PublicKey, ca gossh.Signer, mutate func(*gossh.Certificate)) *gossh.Certificate {
	t.Helper()
	c := &gossh.Certificate{
		Key:             key,
		Serial:          7,
		CertType:        gossh.UserCert,
		KeyId:           "alice",
		ValidPrincipals: []string{"web-*"},
		ValidAfter:      uint64(certAt.Add(-time.Hour).Unix()),
		ValidBefore:     uint64(certAt.Add(time.Hour).Unix()),
		Permissions:     gossh.Permissions{Extensions: map[string]string{"permit-pty": ""}},
	}
	if mutate != nil {
		mutate(c)
	}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	return c
}

func caLine(t testing.TB, s gossh.Signer) string {
	t.Helper()
	return strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey())))
}

func TestAuthorizeCert(t *testing.T) {
	ca, other := testSigner(t, 100), testSigner(t, 101)
	user, _ := testKey(t, 1)
	revokedUser, revokedLine := testKey(t, 2)
	revokedCA := testSigner(t, 102)
	cas, warnings := ParseUserCAs([]byte(caLine(t, ca) + " corp-ca\n" + caLine(t, revokedCA) + "\n@revoked " + revokedLine + "\n@revoked " + caLine(t, revokedCA) + "\n"))
	if len(warnings) != 0 || cas.Len() != 2 {
		t.Fatalf("Len %d, warnings %q", cas.Len(), warnings)
	}
	at := tcp("192.0.2.7")

	t.Run("valid", func(t *testing.T) {
		cert := testCert(t, user, ca, nil)
		id, err := cas.AuthorizeCertAt(cert, at, certAt)
		if err != nil {
			t.Fatal(err)
		}
		want := Identity{Name: "alice", Fingerprint: gossh.FingerprintSHA256(user) + " serial=7", Grants: []Grant{{Instances: []string{"web-*"}}}}
		if id.Name != want.Name || id.Fingerprint != want.Fingerprint || !slices.Equal(g(id).Instances, g(want).Instances) || g(id).NoPTY {
			t.Fatalf("identity %+v, want %+v", id, want)
		}
		if !id.May("web-1") || id.May("db1") {
			t.Fatalf("web-* certificate: May(web-1)=%v May(db1)=%v", id.May("web-1"), id.May("db1"))
		}
	})
	t.Run("principals are instance patterns", func(t *testing.T) {
		cert := testCert(t, user, ca, func(c *gossh.Certificate) {
			c.ValidPrincipals = []string{"db1", "[!x]*-cache"}
			c.KeyId = ""
			c.Extensions = nil
			c.ValidBefore = gossh.CertTimeInfinity
		})
		id, err := cas.AuthorizeCertAt(cert, at, certAt)
		if err != nil {
			t.Fatal(err)
		}
		if !id.May("db1") || !id.May("a-cache") || id.May("x-cache") || id.May("web-1") {
			t.Fatalf("instances %q", g(id).Instances)
		}
		if id.Name != gossh.FingerprintSHA256(user) || !g(id).NoPTY {
			t.Fatalf("no key ID and no permit-pty: name %q, NoPTY %v", id.Name, g(id).NoPTY)
		}
	})
	t.Run("source-address allows", func(t *testing.T) {
		cert := testCert(t, user, ca, func(c *gossh.Certificate) {
			c.CriticalOptions = map[string]string{"source-address": "10.0.0.0/8, 192.0.2.7"}
		})
		if _, err := cas.AuthorizeCertAt(cert, at, certAt); err != nil {
			t.Fatal(err)
		}
	})

	for _, tc := range []struct {
		name   string
		cert   func() *gossh.Certificate
		remote string
		want   error
		detail string
	}{
		{"expired", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.ValidBefore = uint64(certAt.Add(-time.Second).Unix()) })
		}, "", ErrCertInvalid, "expired"},
		{"expires exactly now", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.ValidBefore = uint64(certAt.Unix()) })
		}, "", ErrCertInvalid, "expired"},
		{"not yet valid", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.ValidAfter = uint64(certAt.Add(time.Minute).Unix()) })
		}, "", ErrCertInvalid, "not yet valid"},
		{"host certificate", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.CertType = gossh.HostCert })
		}, "", ErrCertInvalid, "not a user certificate"},
		{"untrusted CA", func() *gossh.Certificate { return testCert(t, user, other, nil) }, "", ErrCertUntrusted, "signed by SHA256:"},
		{"revoked key", func() *gossh.Certificate { return testCert(t, revokedUser, ca, nil) }, "", ErrCertRevoked, "@revoked"},
		{"revoked CA", func() *gossh.Certificate { return testCert(t, user, revokedCA, nil) }, "", ErrCertRevoked, "@revoked"},
		{"principals changed after signing", func() *gossh.Certificate {
			c := testCert(t, user, ca, nil)
			c.ValidPrincipals = []string{"*"}
			return c
		}, "", ErrCertInvalid, "signature"},
		{"lifetime extended after signing", func() *gossh.Certificate {
			c := testCert(t, user, ca, func(c *gossh.Certificate) { c.ValidBefore = uint64(certAt.Add(-time.Second).Unix()) })
			c.ValidBefore = gossh.CertTimeInfinity
			return c
		}, "", ErrCertInvalid, "signature"},
		{"no principals", func() *gossh.Certificate {
			c := testCert(t, user, ca, nil)
			c.ValidPrincipals = nil
			return c
		}, "", ErrCertInvalid, "no principals"},
		{"principal with a slash", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.ValidPrincipals = []string{"web-*", "../db"} })
		}, "", ErrCertInvalid, "not an instance pattern"},
		{"malformed principal pattern", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.ValidPrincipals = []string{"web-["} })
		}, "", ErrCertInvalid, "not an instance pattern"},
		{"force-command", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.CriticalOptions = map[string]string{"force-command": "list"} })
		}, "", ErrCertInvalid, "unsupported critical option"},
		{"source-address refuses", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.CriticalOptions = map[string]string{"source-address": "10.0.0.0/8"} })
		}, "", ErrCertInvalid, "does not allow 192.0.2.7"},
		{"source-address malformed", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) {
				c.CriticalOptions = map[string]string{"source-address": "192.0.2.7,example.com"}
			})
		}, "", ErrCertInvalid, "not an address or network"},
		{"source-address without a client IP", func() *gossh.Certificate {
			return testCert(t, user, ca, func(c *gossh.Certificate) { c.CriticalOptions = map[string]string{"source-address": "0.0.0.0/0"} })
		}, "none", ErrCertInvalid, "no IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remote := at
			if tc.remote == "none" {
				remote = nil
			}
			id, err := cas.AuthorizeCertAt(tc.cert(), remote, certAt)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("AuthorizeCertAt = %+v, %v; want %v with %q", id, err, tc.want, tc.detail)
			}
			if id.Name != "" || g(id).Instances != nil {
				t.Fatalf("refused certificate returned an identity: %+v", id)
			}
		})
	}

	t.Run("no CA file", func(t *testing.T) {
		var none *UserCAs
		if _, err := none.AuthorizeCertAt(testCert(t, user, ca, nil), at, certAt); !errors.Is(err, ErrCertUntrusted) {
			t.Fatalf("nil set: %v", err)
		}
		if _, err := none.AuthorizeCertAt(nil, at, certAt); !errors.Is(err, ErrCertInvalid) {
			t.Fatalf("nil certificate: %v", err)
		}
	})
}

func TestParseUserCAs(t *testing.T) {
	ca, caText := testSigner(t, 100), ""
	caText = caLine(t, ca)
	_, k2 := testKey(t, 2)
	k3, k3Line := testKey(t, 3)
	cert := testCert(t, k3, ca, nil)
	certLine := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(cert)))
	data := strings.Join([]string{
		"# trusted user CAs",
		"",
		caText + " corp",                // 3: trusted
		"cert-authority " + k2 + " old", // 4: trusted, option ignored
		`from="10.0.0.0/8" ` + k2,       // 5: option: skipped
		"not a key",                     // 6
		certLine,                        // 7: a certificate as a CA
		"@revoked\t" + certLine,         // 8: revokes k3
		"@revoked garbage",              // 9: loud warning
		"@cert-authority " + k2,         // 10: unknown marker
		"   " + k3Line + "   \r",        // 11: trusted (then revoked)
	}, "\n")
	cas, warnings := ParseUserCAs([]byte(data))
	if cas.Len() != 3 {
		t.Errorf("Len = %d, want 3", cas.Len())
	}
	want := []string{
		"line 5: skipped CA SHA256:",
		"line 6: skipped, not a public key",
		"line 7: skipped SHA256:",
		"line 9: @revoked line skipped, NOTHING IS REVOKED",
		`line 10: skipped: unknown marker "@cert-authority"`,
	}
	if len(warnings) != len(want) {
		t.Fatalf("warnings %q", warnings)
	}
	for i, w := range want {
		if !strings.HasPrefix(warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, warnings[i], w)
		}
	}
	if !cas.isTrusted(ca.PublicKey()) || !cas.isRevoked(&gossh.Certificate{Key: k3}) {
		t.Error("line 3 not trusted or line 8 not revoked")
	}
}

func TestLoadUserCAsAndStore(t *testing.T) {
	dir := t.TempDir()
	ca, user := testSigner(t, 100), testSigner(t, 1)
	path := filepath.Join(dir, "user_ca.pub")

	cas, warnings, err := LoadUserCAs(path)
	if err != nil || cas.Len() != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "does not exist") {
		t.Fatalf("missing file: %v, %q, %v", cas, warnings, err)
	}
	if _, _, err := LoadUserCAs(dir); err == nil {
		t.Fatal("a directory loaded")
	}
	if err := os.WriteFile(path, []byte(caLine(t, ca)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if cas, _, err := LoadUserCAs(path); cas != nil || !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "is writable by group or others (mode 0666)") {
		t.Fatalf("world-writable file: %v, %v", cas, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}

	store, err := NewCAStore(Config{Path: path, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := func(mutate func(*gossh.Certificate)) *gossh.Certificate {
		return testCert(t, user.PublicKey(), ca, func(c *gossh.Certificate) {
			c.ValidAfter = uint64(time.Now().Add(-time.Minute).Unix())
			c.ValidBefore = uint64(time.Now().Add(time.Minute).Unix())
			if mutate != nil {
				mutate(c)
			}
		})
	}
	if _, err := store.AuthorizeCert(now(nil), tcp("127.0.0.1")); err != nil {
		t.Fatalf("certificate valid now: %v", err)
	}
	expired := now(func(c *gossh.Certificate) { c.ValidBefore = uint64(time.Now().Add(-time.Second).Unix()) })
	if _, err := store.AuthorizeCert(expired, tcp("127.0.0.1")); !errors.Is(err, ErrCertInvalid) {
		t.Fatalf("expired certificate: %v", err)
	}
	// Revoking the user's key takes effect on reload.
	if err := os.WriteFile(path, []byte(caLine(t, ca)+"\n@revoked "+caLine(t, user)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AuthorizeCert(now(nil), tcp("127.0.0.1")); !errors.Is(err, ErrCertRevoked) {
		t.Fatalf("after @revoked and Reload: %v", err)
	}
	if store.Current().Len() != 1 {
		t.Fatalf("Len = %d", store.Current().Len())
	}
}
