package websock

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/oidc"
)

// TestSigninCookie: a sign-in cookie is believed only with this gateway's
// MAC, before its expiry, until its logout, and for an identity a policy
// covers; a token login's value never passes as one. (The provider is
// never contacted here: TestBrowserSignIn signs in with a real one.)
func TestSigninCookie(t *testing.T) {
	prov, err := oidc.New(oidc.Config{Issuer: "http://127.0.0.1:1/dex", ClientID: "termgate", RedirectURL: "http://127.0.0.1/oidc/callback"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, localBackend(), nil, func(c *Config) {
		c.OIDC = prov
		c.Policies = keys.Policies{{Groups: []string{"ops"}, Instances: []string{"web*"}}}
	})
	good := signin{V: signinVersion, ID: "abc", Subject: "s1", Email: "alice@example.com", Groups: []string{"ops"}, Expires: time.Now().Add(time.Hour)}
	get := func(value string) (int, string) {
		h := http.Header{"Cookie": {oidcCookie + "=" + value}}
		resp := e.do(http.MethodGet, "/api/whoami", h, nil)
		return resp.StatusCode, respText(resp)
	}
	if code, body := get(e.srv.cookies.sealJSON(oidcCookie, good)); code != 200 || !strings.Contains(body, `"who":"alice@example.com"`) || !strings.Contains(body, `"via":"oidc"`) {
		t.Fatalf("a good sign-in: %d %s", code, body)
	}
	v := e.srv.cookies.sealJSON(oidcCookie, good)
	tampered := strings.Replace(v, v[:8], strings.ToUpper(v[:8]), 1)
	expired := good
	expired.Expires = time.Now().Add(-time.Second)
	stranger := good
	stranger.Groups = []string{"guests"}
	login, _ := e.srv.cookies.issue(keys.TokenHash(tokAll))
	for name, tc := range map[string]struct {
		value string
		code  int
	}{
		"tampered":            {tampered, 401},
		"expired":             {e.srv.cookies.sealJSON(oidcCookie, expired), 401},
		"a token login":       {login, 401},
		"sealed as pending":   {e.srv.cookies.sealJSON(oidcPendingCookie, good), 401},
		"no matching policy":  {e.srv.cookies.sealJSON(oidcCookie, stranger), 403},
		"oversized":           {strings.Repeat("a", maxSigninCookie+1), 401},
		"not even base64.mac": {"x", 401},
	} {
		if code, body := get(tc.value); code != tc.code {
			t.Errorf("%s: %d %s, want %d", name, code, body, tc.code)
		}
	}
	// Logout forgets it.
	h := http.Header{"Cookie": {oidcCookie + "=" + v}, "Origin": {e.base}}
	if resp := e.do(http.MethodPost, "/api/logout", h, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if code, _ := get(v); code != 401 {
		t.Fatalf("after logout: %d, want 401", code)
	}
	if resp := e.do(http.MethodGet, "/api/signin", nil, nil); !strings.Contains(respText(resp), `"oidc":true`) {
		t.Error("/api/signin does not offer the sign-in")
	}
}

// FuzzSigninCookie: whatever a browser presents as a sign-in cookie, the
// check never panics and believes nothing unsigned.
func FuzzSigninCookie(f *testing.F) {
	c := &cookies{key: newCookieKey(), now: time.Now}
	f.Add(c.sealJSON(oidcCookie, signin{V: 1, ID: "x", Email: "a@b", Expires: time.Now().Add(time.Hour)}))
	f.Add("e30." + strings.Repeat("A", 43))
	f.Add("")
	f.Fuzz(func(t *testing.T, value string) {
		var si signin
		if err := c.openJSON(oidcCookie, value, &si); err == nil && si.V != 1 {
			t.Fatalf("an unsigned value was believed: %q", value)
		}
	})
}
