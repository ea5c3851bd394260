package sshd

import (
	"regexp"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/keys"
)

// TestAuthFromRefusalInTheLog: issue 32 item 7 (red team round 4 L11). A
// key refused because its from= does not allow the client's address says
// so in the main log at Warn, with the address and the key, so the
// operator sees why a known key cannot log in; a key nobody knows is not
// named at Warn (scanners would fill the log with them).
func TestAuthFromRefusalInTheLog(t *testing.T) {
	f := newFixture(t, nil)
	ak, _ := keys.ParseAuthorizedKeys([]byte(`from="10.0.0.0/8" ` + string(gossh.MarshalAuthorizedKey(f.keys["admin"].PublicKey()))))
	f.auth.set(ak)
	if _, err := gossh.Dial("tcp", f.addr, f.clientConfig("stranger", "me")); err == nil {
		t.Fatal("an unknown key logged in")
	}
	if _, err := gossh.Dial("tcp", f.addr, f.clientConfig("admin", "me")); err == nil {
		t.Fatal("a key with from=10.0.0.0/8 logged in from 127.0.0.1")
	}
	fp := regexp.QuoteMeta(gossh.FingerprintSHA256(f.keys["admin"].PublicKey()))
	want := regexp.MustCompile(`level=WARN msg="key refused: its from= in authorized_keys does not allow this address[^"]*" via=ssh remote=127\.0\.0\.1:\d+ user=me key=` + fp + `\n`)
	var fromWarns []string
	stranger := gossh.FingerprintSHA256(f.keys["stranger"].PublicKey())
	for _, l := range strings.Split(f.logs.String(), "\n") {
		if !strings.Contains(l, "level=WARN") {
			continue
		}
		if strings.Contains(l, "from=") {
			fromWarns = append(fromWarns, l)
		}
		if strings.Contains(l, stranger) {
			t.Errorf("an unknown key is named at Warn: %q", l)
		}
	}
	if len(fromWarns) != 1 || !want.MatchString(fromWarns[0]+"\n") {
		t.Fatalf("Warn lines naming from= %q, want one matching %s", fromWarns, want)
	}
}
