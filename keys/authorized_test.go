package keys

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/fileperm"
)

func TestParseAuthorizedKeys(t *testing.T) {
	k1, l1 := testKey(t, 1)
	k2, l2 := testKey(t, 2)
	k3, l3 := testKey(t, 3)
	k4, l4 := testKey(t, 4)
	k5, _ := testKey(t, 5)
	data := strings.Join([]string{
		"# comment",
		"",
		"   ",
		l1 + " alice@laptop",
		`instances="web-*,db" ` + l2,
		`no-pty,command="/bin/date" ` + l3 + " carol",
		"not a key at all",
		"ssh-ed25519 AAAAnotbase64!!",
		`restrict,from="10.0.0.0/8" ` + l4 + " dave\r",
	}, "\n")
	ak, warnings := ParseAuthorizedKeys([]byte(data))

	if ak.Len() != 3 {
		t.Errorf("Len = %d, want 3", ak.Len())
	}
	wantWarnings := []string{
		`line 6 (carol): unsupported option "command"`,
		"line 7: skipped, not a public key",
		"line 8: skipped, not a public key",
	}
	if len(warnings) != len(wantWarnings) {
		t.Errorf("warnings = %q, want %d", warnings, len(wantWarnings))
	}
	for i, w := range wantWarnings {
		if i < len(warnings) && !strings.HasPrefix(warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, warnings[i], w)
		}
	}

	addr := tcp("10.1.1.1")
	id, err := ak.Authorize(k1, addr)
	if err != nil || id.Name != "alice@laptop" || g(id).NoPTY || len(g(id).Instances) != 0 || !strings.HasPrefix(id.Fingerprint, "SHA256:") {
		t.Errorf("k1: %+v, %v", id, err)
	}
	id, err = ak.Authorize(k2, addr)
	if err != nil || id.Name != id.Fingerprint || !id.May("web-1") || !id.May("db") || id.May("cache") {
		t.Errorf("k2 (no comment, instances): %+v, %v", id, err)
	}
	if _, err = ak.Authorize(k3, addr); !errors.Is(err, ErrKeyRefused) || !strings.Contains(err.Error(), "line 6") {
		t.Errorf("k3 (command=): err = %v, want ErrKeyRefused naming line 6", err)
	}
	id, err = ak.Authorize(k4, addr)
	if err != nil || id.Name != "dave" || !g(id).NoPTY {
		t.Errorf("k4 (restrict, from): %+v, %v", id, err)
	}
	if _, err = ak.Authorize(k4, tcp("192.0.2.1")); !errors.Is(err, ErrFromMismatch) || !strings.Contains(err.Error(), "192.0.2.1") {
		t.Errorf("k4 from elsewhere: err = %v, want ErrFromMismatch naming the address", err)
	}
	if _, err = ak.Authorize(k5, addr); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("k5: err = %v, want ErrUnknownKey", err)
	}
}

func TestAuthorizeOrder(t *testing.T) {
	k, l := testKey(t, 1)
	tests := []struct {
		name    string
		lines   []string
		remote  net.Addr
		want    string // identity name, or "" with wantErr
		wantErr error
	}{
		{"first line wins", []string{l + " first", `instances="x" ` + l + " second"}, tcp("10.0.0.1"), "first", nil},
		{"from mismatch falls through", []string{`from="192.0.2.0/24" ` + l + " lan", l + " anywhere"}, tcp("10.0.0.1"), "anywhere", nil},
		{"from match stops", []string{`from="10.0.0.0/8" ` + l + " lan", l + " anywhere"}, tcp("10.0.0.1"), "lan", nil},
		{"all from mismatch", []string{`from="192.0.2.0/24" ` + l + " a", `from="!10.0.0.1,*" ` + l + " b"}, tcp("10.0.0.1"), "", ErrFromMismatch},
		{"invalid from falls through", []string{`from="10.0.0.1/8" ` + l + " bad", l + " good"}, tcp("10.0.0.1"), "good", nil},
		{"refused line blocks later lines", []string{`command="x" ` + l + " forced", l + " free"}, tcp("10.0.0.1"), "", ErrKeyRefused},
		{"refused line after a match is never reached", []string{l + " free", `command="x" ` + l + " forced"}, tcp("10.0.0.1"), "free", nil},
		{"refused line after a from mismatch blocks", []string{`from="192.0.2.1" ` + l + " lan", `environment="A=1" ` + l + " env"}, tcp("10.0.0.1"), "", ErrKeyRefused},
		{"no IP never satisfies from", []string{`from="*" ` + l + " any"}, &net.UnixAddr{Name: "/x", Net: "unix"}, "", ErrFromMismatch},
		{"no IP without from is fine", []string{l + " any"}, nil, "any", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ak, _ := ParseAuthorizedKeys([]byte(strings.Join(tt.lines, "\n")))
			id, err := ak.Authorize(k, tt.remote)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || id.Name != tt.want {
				t.Fatalf("Authorize = %+v, %v; want %q", id, err, tt.want)
			}
		})
	}
}

func TestAuthorizeDoesNotShareInstances(t *testing.T) {
	k, l := testKey(t, 1)
	ak, _ := ParseAuthorizedKeys([]byte(`instances="web" ` + l))
	id, _ := ak.Authorize(k, nil)
	id.Grants[0].Instances[0] = "*"
	id, _ = ak.Authorize(k, nil)
	if id.May("db") {
		t.Fatal("changing a returned identity changed the set")
	}
}

func TestAuthorizeNil(t *testing.T) {
	k, _ := testKey(t, 1)
	var ak *AuthorizedKeys
	if _, err := ak.Authorize(k, nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("nil set: %v", err)
	}
	if _, err := (&AuthorizedKeys{}).Authorize(k, nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("zero set: %v", err)
	}
	if _, err := (&AuthorizedKeys{}).Authorize(nil, nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("nil key: %v", err)
	}
}

func TestParseAuthorizedKeysSkipsCertificatesAndOtherTypes(t *testing.T) {
	k, l := testKey(t, 1)
	// A key whose declared type contradicts its blob.
	mismatch := strings.Replace(l, "ssh-ed25519", "ssh-rsa", 1)
	ak, warnings := ParseAuthorizedKeys([]byte(mismatch + "\n" + "restrict " + mismatch))
	if ak.Len() != 0 || len(warnings) != 2 {
		t.Errorf("type mismatch: Len %d, warnings %q", ak.Len(), warnings)
	}
	if _, err := ak.Authorize(k, nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("type mismatch line authorized the key: %v", err)
	}
}

func TestLoadAuthorizedKeys(t *testing.T) {
	dir := t.TempDir()
	k, l := testKey(t, 1)

	t.Run("missing file is an empty set", func(t *testing.T) {
		path := filepath.Join(dir, "missing")
		ak, warnings, err := LoadAuthorizedKeys(path)
		if err != nil || ak.Len() != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "does not exist") {
			t.Fatalf("= %v, %q, %v", ak, warnings, err)
		}
	})
	t.Run("warnings carry the path", func(t *testing.T) {
		path := filepath.Join(dir, "ak")
		if err := os.WriteFile(path, []byte(l+" me\ngarbage\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ak, warnings, err := LoadAuthorizedKeys(path)
		if err != nil || ak.Len() != 1 {
			t.Fatalf("= %v, %q, %v", ak, warnings, err)
		}
		if len(warnings) != 1 || !strings.HasPrefix(warnings[0], path+": line 2:") {
			t.Errorf("warnings = %q", warnings)
		}
		if _, err := ak.Authorize(k, nil); err != nil {
			t.Error(err)
		}
	})
	t.Run("group-writable file is refused", func(t *testing.T) {
		path := filepath.Join(dir, "open")
		if err := os.WriteFile(path, []byte(l+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o664); err != nil {
			t.Fatal(err)
		}
		ak, _, err := LoadAuthorizedKeys(path)
		if ak != nil || !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "writable by group or others (mode 0664)") || !strings.Contains(err.Error(), "chmod go-w "+path) {
			t.Fatalf("= %v, %v", ak, err)
		}
	})
	t.Run("a directory is an error", func(t *testing.T) {
		if _, _, err := LoadAuthorizedKeys(dir); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("an oversized file is an error", func(t *testing.T) {
		path := filepath.Join(dir, "big")
		big := strings.Repeat(fmt.Sprintf("# %0100d\n", 0), maxFileSize/100)
		if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadAuthorizedKeys(path); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("err = %v", err)
		}
	})
}
