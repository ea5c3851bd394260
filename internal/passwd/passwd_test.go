package passwd

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/names"
)

const etcPasswd = `root:x:0:0:root:/root:/bin/sh
# a comment
+nis::::::
bad line
app:x:1000:1000:App,,,:/home/app:/bin/ash
nohome:x:1001:1001::relative/home:sh
dup:x:1002:1002::/one:/bin/sh
dup:x:1003:1003::/two:/bin/sh
neg:x:-1:0::/:/bin/sh
` + "long:x:5:5:" + "%s" + ":/l:/bin/sh\n"

const etcGroup = `root:x:0:root
wheel:x:10:root,app
app:x:1000:app
docker:x:999:other,app
broken:x:abc:app
`

func files() (*strings.Reader, *strings.Reader) {
	return strings.NewReader(strings.Replace(etcPasswd, "%s", strings.Repeat("g", 10000), 1)), strings.NewReader(etcGroup)
}

func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		login string
		want  User
		err   error
	}{
		{"app", User{Name: "app", UID: 1000, GID: 1000, Groups: []uint32{10, 999}, Home: "/home/app", Shell: "/bin/ash"}, nil},
		{"root", User{Name: "root", Groups: []uint32{10}, Home: "/root", Shell: "/bin/sh"}, nil},
		{"1000", User{Name: "app", UID: 1000, GID: 1000, Groups: []uint32{10, 999}, Home: "/home/app", Shell: "/bin/ash"}, nil},
		{"4321", User{UID: 4321, GID: 4321, Home: "/"}, nil},
		{"nohome", User{Name: "nohome", UID: 1001, GID: 1001, Home: "/"}, nil},
		{"dup", User{Name: "dup", UID: 1002, GID: 1002, Home: "/one", Shell: "/bin/sh"}, nil},
		{"bob", User{}, ErrNoSuchUser},
		{"neg", User{}, ErrNoSuchUser},
		{"long", User{}, ErrNoSuchUser}, // its line is past maxLine
	} {
		pw, gr := files()
		got, err := Lookup(tt.login, pw, gr)
		if tt.err != nil {
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.login) {
				t.Errorf("%s: err %v, want %v naming it", tt.login, err, tt.err)
			}
			continue
		}
		if err != nil || got.Name != tt.want.Name || got.UID != tt.want.UID || got.GID != tt.want.GID ||
			got.Home != tt.want.Home || got.Shell != tt.want.Shell || !slices.Equal(got.Groups, tt.want.Groups) {
			t.Errorf("%s: %+v, %v; want %+v", tt.login, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "a:b", "-x", "a\nb"} {
		pw, gr := files()
		if _, err := Lookup(bad, pw, gr); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A hostile instance's files: endless lines and endless files end the
// lookup within the bounds.
func TestLookupBounded(t *testing.T) {
	huge := strings.NewReader(strings.Repeat("x", 64<<20))
	if _, err := Lookup("app", huge, nil); !errors.Is(err, ErrNoSuchUser) {
		t.Fatal(err)
	}
	many := strings.NewReader(strings.Repeat("a:x:1:1::/:/bin/sh\n", 1<<20) + "app:x:7:7::/h:/bin/sh\n")
	if _, err := Lookup("app", many, nil); !errors.Is(err, ErrNoSuchUser) {
		t.Fatalf("a match past %d bytes: %v", maxFile, err)
	}
	groups := strings.NewReader(strings.Repeat("g:x:5:app\n", 1000) + strings.Repeat("h:x:6:app\n", 1000))
	pw := strings.NewReader("app:x:7:7::/h:/bin/sh\n")
	u, err := Lookup("app", pw, groups)
	if err != nil || len(u.Groups) > maxGroups {
		t.Fatalf("%d groups, %v", len(u.Groups), err)
	}
}

func FuzzLookup(f *testing.F) {
	f.Add("app", etcPasswd, etcGroup)
	f.Add("1000", "app:x:1000:1000::/home/app:/bin/sh\n", "g:x:1:app\n")
	f.Add("root", "root::0:0:::\n", "")
	f.Fuzz(func(t *testing.T, login, pw, gr string) {
		u, err := Lookup(login, strings.NewReader(pw), strings.NewReader(gr))
		if err != nil {
			return
		}
		if uid, numeric := numberLogin(login); numeric && u.UID != uid || !numeric && u.Name != login {
			t.Fatalf("%q found %+v", login, u)
		}
		if !strings.HasPrefix(u.Home, "/") || strings.ContainsAny(u.Home, "\n:") || len(u.Groups) > maxGroups {
			t.Fatalf("%+v", u)
		}
		if u.Shell != "" && !strings.HasPrefix(u.Shell, "/") {
			t.Fatalf("shell %q", u.Shell)
		}
	})
}

func numberLogin(s string) (uint32, bool) { return names.LoginUID(s) }
