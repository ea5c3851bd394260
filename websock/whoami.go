package websock

import (
	"crypto/subtle"
	"github.com/termgate/termgate/keys"
	"net/http"
	"time"
)

// whoami is GET /api/whoami's answer: who the request's credential belongs
// to. The page shows Name at all times, and asks before a sign-in link
// replaces the login with another token's (login CSRF, issue 9 item 7).
type whoami struct {
	Name string `json:"name"`
	// Who is Name, as attached lists and the audit trail name the caller
	// (a signed-in identity's email).
	Who string `json:"who"`
	// Groups are a signed-in identity's groups at the provider.
	Groups []string `json:"groups,omitempty"`
	// Expires is when a sign-in ends.
	Expires *time.Time `json:"expires,omitempty"`
	// Instances are the token's instances= patterns; empty means every
	// instance.
	Instances []string `json:"instances"`
	// Via is how the request authenticated: "bearer", "cookie" or "oidc".
	Via string `json:"via"`
	// ReadOnly is set when the credential is read-only everywhere it
	// reaches: its attaches are observers.
	ReadOnly bool `json:"read_only"`
	// Access is what it may do, grant by grant (keys.Describe's words),
	// so a signed-in identity read-write on some instances and read-only
	// on others reads correctly.
	Access string `json:"access"`
	// Logins are the instance users it may be (keys.Identity.Logins):
	// listed ones in order, "*" for any, [] for the default user only.
	// The page's new-session login picker offers them.
	Logins []string `json:"logins"`
	// SameLogin is set when a bearer request also carries a valid login
	// cookie: whether the cookie is a login of that same token. The page
	// asks this with the token of a sign-in link, so that it can open the
	// link without a question when nothing would change.
	SameLogin *bool `json:"same_login,omitempty"`
}

// handleWhoami serves GET /api/whoami.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	out := whoami{Name: c.id.Name, Who: c.id.Name, Instances: c.id.Scope(), Via: c.method.String(),
		ReadOnly: c.id.ReadOnlyEverywhere(), Access: keys.Describe(c.id), Logins: c.id.Logins()}
	if c.signin != nil {
		out.Groups, out.Expires = c.signin.Groups, &c.signin.Expires
	}
	if out.Instances == nil {
		out.Instances = []string{}
	}
	if c.method == byBearer {
		if ck, err := r.Cookie(cookieName); err == nil {
			if hash, err := s.cookies.verify(ck.Value); err == nil {
				same := subtle.ConstantTimeCompare(hash, c.tokenHash) == 1
				out.SameLogin = &same
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}
