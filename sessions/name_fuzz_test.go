package sessions

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/keys"
)

// contractName is the instance name syntax as CONTRACT.md writes it, kept
// apart from internal/names so that a change to either is caught here.
var contractName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func FuzzCheckName(f *testing.F) {
	for _, s := range []string{
		"web1", "a", "A-b_c.d", "", ".", "..", "-rf", ".hidden", "_x",
		"a/b", "../etc/passwd", "web1\n", "web1\x00", " web1", "wéb", "web 1",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "x" + strings.Repeat("-", 127),
		"$(id)", "`id`", "a;b", "*", "web-?", "\u202eweb",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := CheckName(name)
		ok := err == nil
		if ok != contractName.MatchString(name) {
			t.Fatalf("CheckName(%q) = %v, contract regexp says %v", name, err, contractName.MatchString(name))
		}
		// keys checks names on its own (it does not import sessions);
		// the two must agree.
		if may := (keys.Identity{Grants: []keys.Grant{{}}}).May(name); may != ok {
			t.Fatalf("keys.Identity.May(%q) = %v, CheckName %v", name, may, err)
		}
		if !ok {
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("CheckName(%q) = %v, does not wrap ErrBadName", name, err)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error for a %d-byte name is %d bytes long", len(name), len(err.Error()))
			}
			return
		}
		switch {
		case len(name) == 0 || len(name) > 128:
			t.Fatalf("accepted %d-byte name", len(name))
		case strings.ContainsAny(name, "/\\\x00 \t\r\n$`;*?"):
			t.Fatalf("accepted %q", name)
		case name[0] == '.' || name[0] == '-' || name[0] == '_':
			t.Fatalf("accepted %q, which starts with %q", name, name[0])
		}
		for _, r := range name {
			if r > 0x7e {
				t.Fatalf("accepted non-ASCII %q", name)
			}
		}
	})
}
