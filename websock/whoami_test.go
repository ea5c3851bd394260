package websock

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/termgate/termgate/keys"
)

func (e *env) whoami(h http.Header) (int, whoami) {
	e.t.Helper()
	resp := e.do("GET", "/api/whoami", h, nil)
	var w whoami
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
			e.t.Fatalf("whoami body: %v", err)
		}
	}
	return resp.StatusCode, w
}

// TestWhoami: the page learns who it is signed in as (and a sign-in link's
// token's name, and whether that is the same login) from GET /api/whoami,
// which needs a credential like every other route.
func TestWhoami(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	if status, _ := e.whoami(nil); status != http.StatusUnauthorized {
		t.Errorf("without a credential: %d, want 401", status)
	}
	if status, _ := e.whoami(bearerHeader("wrong-token-0123456789abcdef")); status != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d, want 401", status)
	}

	status, me := e.whoami(bearerHeader(tokWeb))
	if status != http.StatusOK || me.Name != "webonly" || !slices.Equal(me.Instances, []string{"web*"}) || me.Via != "bearer" || me.SameLogin != nil {
		t.Errorf("bearer tokWeb: %d %+v, want webonly, [web*], bearer, no same_login", status, me)
	}
	alice := e.login(tokAll)
	status, me = e.whoami(withCookie(alice, ""))
	if status != http.StatusOK || me.Name != "alice" || me.Instances == nil || len(me.Instances) != 0 || me.Via != "cookie" {
		t.Errorf("alice's login: %d %+v, want alice, [], cookie", status, me)
	}

	// A sign-in link's token asked about next to the current login.
	h := withCookie(alice, "")
	h.Set("Authorization", "Bearer "+tokWeb)
	status, me = e.whoami(h)
	if status != http.StatusOK || me.Name != "webonly" || me.SameLogin == nil || *me.SameLogin {
		t.Errorf("tokWeb next to alice's login: %d %+v, want webonly with same_login false", status, me)
	}
	h.Set("Authorization", "Bearer "+tokAll)
	status, me = e.whoami(h)
	if status != http.StatusOK || me.Name != "alice" || me.SameLogin == nil || !*me.SameLogin {
		t.Errorf("tokAll next to its own login: %d %+v, want alice with same_login true", status, me)
	}
	// Asking never signs anyone in or out: the cookie is alice's still.
	if resp := e.do("GET", "/api/whoami", h, nil); len(resp.Cookies()) != 0 {
		t.Errorf("whoami set cookies: %v", resp.Cookies())
	}
}

// TestWhoamiLogins: GET /api/whoami lists the credential's logins, which
// the page's new-session picker offers (issue 36 item 2): listed ones in
// order, "*" for any, [] for the default user only.
func TestWhoamiLogins(t *testing.T) {
	const (
		tokApp = "app-0123456789abcdef0123456789"
		tokAny = "any-0123456789abcdef0123456789"
	)
	toks := fakeTokens{
		tokAll: testTokens[tokAll],
		tokApp: {Name: "apps", Kind: keys.KindToken, Grants: []keys.Grant{{Logins: []string{"app", "deploy"}}}},
		tokAny: {Name: "anyone", Kind: keys.KindToken, Grants: []keys.Grant{{Instances: []string{"web*"}, Logins: []string{"*"}}}},
	}
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.Tokens = toks })
	for tok, want := range map[string][]string{tokAll: {}, tokApp: {"app", "deploy"}, tokAny: {"*"}} {
		resp := e.do("GET", "/api/whoami", bearerHeader(tok), nil)
		var raw map[string]json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("whoami: %d %v", resp.StatusCode, err)
		}
		var got []string
		if err := json.Unmarshal(raw["logins"], &got); err != nil || got == nil || !slices.Equal(got, want) {
			t.Errorf("%s: logins %s, want %q (never null)", toks[tok].Name, raw["logins"], want)
		}
	}
}
