package keys

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/termgate/termgate/internal/names"
)

// Logins (CONTRACT.md "Named sessions and logins"): which of an
// instance's users a credential may be inside it. A grant lists them
// (authorized_keys logins="app,deploy", token logins=app,deploy, policy
// logins: [app]); "*" allows any; a grant without the option allows only
// the instance's default user (the login ""), so nothing changes for
// credentials written before logins existed.

// AnyLogin in a grant's Logins allows every login.
const AnyLogin = "*"

// maxLogins bounds one option's list.
const maxLogins = 64

// parseLogins reads the value of a logins= option: comma-separated logins
// (names.ValidLogin) or "*".
func parseLogins(v string) ([]string, error) {
	if v == "" {
		return nil, fmt.Errorf("logins= is empty (without the option the credential is the instance's default user)")
	}
	parts := strings.Split(v, ",")
	if len(parts) > maxLogins {
		return nil, fmt.Errorf("logins= lists %d logins, at most %d", len(parts), maxLogins)
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p != AnyLogin && !names.ValidLogin(p) {
			return nil, fmt.Errorf("logins=: %s", badLogin(p))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// badLogin says why login is not one.
func badLogin(login string) string {
	return fmt.Sprintf("login %q is not a user name an instance's /etc/passwd can hold: use letters, digits, '_', '.' and '-' (at most 32, not starting with '.' or '-'), or a numeric uid", displayName(login, 40))
}

// logins gathers the logins the covering grants allow, in their order:
// listed (without "*"), whether any is allowed, and whether the default
// user is (a grant without logins=).
type loginSet struct {
	listed      []string
	any         bool
	defaultUser bool
}

func (s *loginSet) add(g Grant) {
	if len(g.Logins) == 0 {
		s.defaultUser = true
		return
	}
	for _, l := range g.Logins {
		switch {
		case l == AnyLogin:
			s.any = true
		case !slices.Contains(s.listed, l):
			s.listed = append(s.listed, l)
		}
	}
}

// Login is the login a request without one runs as: the first the
// credential lists on the instance, else "" (the instance's default user).
func (a Access) Login() string {
	if len(a.logins.listed) > 0 {
		return a.logins.listed[0]
	}
	return ""
}

// DecideLogin decides the login a request asks for ("": none given) and
// returns the one it runs as (see Login). It refuses a login outside the
// syntax a passwd line can hold, and one the credential's grants on the
// instance do not list; a credential without logins= is the default user
// only. Whether the login exists in the instance is the backend's to say.
func (a Access) DecideLogin(asked string) (string, *Refusal) {
	if r := a.Decide(Watch); r != nil {
		return "", r
	}
	if asked == "" {
		if a.Login() == "" && !a.logins.defaultUser && !a.logins.any {
			// Unreachable with grants as parsed (a listed login is
			// the default then), kept for a hand-made Access.
			return "", a.loginRefusal(asked)
		}
		return a.Login(), nil
	}
	if !names.ValidLogin(asked) {
		return "", &Refusal{Action: Terminal, Reason: "invalid login", Message: "login refused: " + badLogin(asked)}
	}
	if a.logins.any || slices.Contains(a.logins.listed, asked) {
		return asked, nil
	}
	return "", a.loginRefusal(asked)
}

func (a Access) loginRefusal(asked string) *Refusal {
	noun := a.Kind.Noun()
	may := "only the instance's default user (it has no logins= option): connect without LOGIN@"
	if len(a.logins.listed) > 0 {
		may = "the logins " + strings.Join(a.logins.listed, ", ") + " (its logins= option)"
		if a.logins.defaultUser {
			may += " and the instance's default user"
		}
	}
	what := "login " + strconv.Quote(asked)
	if asked == "" {
		what = "the instance's default user"
	}
	return &Refusal{Action: Terminal, Reason: "login not allowed for this " + noun,
		Message: fmt.Sprintf("login refused: this %s may not be %s on %s; it may use %s", noun, what, a.Instance, may)}
}

// describeLogins is Describe's part for a grant's logins.
func describeLogins(g Grant) string {
	switch {
	case len(g.Logins) == 0:
		return ""
	case slices.Contains(g.Logins, AnyLogin):
		return ", any login"
	}
	return ", logins " + strings.Join(g.Logins, ",")
}

// Logins lists the logins the identity's grants allow anywhere, for the
// page's new-session picker (GET /api/whoami): the listed ones in grant
// order, then AnyLogin when a grant allows any; empty when every grant is
// the default user only. Per instance, DecideLogin still decides.
func (id Identity) Logins() []string {
	var s loginSet
	for _, g := range id.Grants {
		s.add(g)
	}
	out := append([]string{}, s.listed...)
	if s.any {
		out = append(out, AnyLogin)
	}
	return out
}
