package keys

import (
	"slices"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// A key, a certificate and a token each become observers by their own
// spelling of read-only, and keep their instance limits.
func TestReadOnlyCredentials(t *testing.T) {
	k1, l1 := testKey(t, 1)
	k2, l2 := testKey(t, 2)
	ak, warnings := ParseAuthorizedKeys([]byte(`read-only,instances="web-*" ` + l1 + " auditor\n" + l2 + " alice\n"))
	if len(warnings) != 0 || ak.Len() != 2 {
		t.Fatalf("read-only refused: Len %d, warnings %q", ak.Len(), warnings)
	}
	id, err := ak.Authorize(k1, tcp("192.0.2.1"))
	if err != nil || !g(id).ReadOnly || id.Name != "auditor" || !slices.Equal(g(id).Instances, []string{"web-*"}) || id.May("db1") {
		t.Fatalf("read-only key: %+v, %v", id, err)
	}
	if id, err := ak.Authorize(k2, tcp("192.0.2.1")); err != nil || g(id).ReadOnly {
		t.Fatalf("plain key: %+v, %v", id, err)
	}

	ca := testSigner(t, 100)
	cas, _ := ParseUserCAs([]byte(caLine(t, ca) + "\n"))
	cert := testCert(t, k1, ca, func(c *gossh.Certificate) { c.Extensions[CertReadOnly] = "" })
	id, err = cas.AuthorizeCertAt(cert, tcp("192.0.2.1"), certAt)
	if err != nil || !g(id).ReadOnly || g(id).NoPTY || !slices.Equal(g(id).Instances, []string{"web-*"}) {
		t.Fatalf("certificate with %s: %+v, %v", CertReadOnly, id, err)
	}
	id, err = cas.AuthorizeCertAt(testCert(t, k1, ca, nil), tcp("192.0.2.1"), certAt)
	if err != nil || g(id).ReadOnly {
		t.Fatalf("certificate without the extension: %+v, %v", id, err)
	}

	tk, warnings := ParseTokens([]byte("0123456789abcdefXYZ watcher instances=web-* read-only\n"))
	id, ok := tk.Check("0123456789abcdefXYZ")
	if !ok || !g(id).ReadOnly || id.May("db1") || !id.May("web-1") || len(warnings) != 0 {
		t.Fatalf("read-only token: %+v, %v, warnings %q", id, ok, warnings)
	}
}

// A key that becomes read-only while attached is dropped (it reconnects as
// an observer); one that stops being read-only stays.
func TestRecheckKeyMadeReadOnly(t *testing.T) {
	k, l := testKey(t, 1)
	plain, _ := ParseAuthorizedKeys([]byte(l + " alice\n"))
	ro, _ := ParseAuthorizedKeys([]byte("read-only " + l + " alice\n"))
	was, err := plain.Authorize(k, tcp("192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	err = Recheck(was, "web1", func() (Identity, error) { return ro.Authorize(k, tcp("192.0.2.1")) })
	if err == nil || err.Error() != "your key is now read-only: reconnect to watch" {
		t.Fatalf("Recheck = %v", err)
	}
	wasRO, _ := ro.Authorize(k, tcp("192.0.2.1"))
	if err := Recheck(wasRO, "web1", func() (Identity, error) { return plain.Authorize(k, tcp("192.0.2.1")) }); err != nil {
		t.Fatalf("wider rights: %v", err)
	}
}
