package oidc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// brokenProvider is a deliberately broken OpenID provider for the
// verification's abuse cases (TestBrowserSignIn signs in with real Dex):
// it serves discovery and its keys, and answers every code with the ID
// token that claims makes.
type brokenProvider struct {
	srv    *httptest.Server
	key    *rsa.PrivateKey
	claims func(iss string) map[string]any
	alg    jose.SignatureAlgorithm
	hmac   []byte // with alg HS256: sign with this instead
}

func newBrokenProvider(t *testing.T) *brokenProvider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &brokenProvider{key: key, alg: jose.RS256}
	mux := http.NewServeMux()
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	iss := p.srv.URL
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss, "authorization_endpoint": iss + "/auth", "token_endpoint": iss + "/token",
			"jwks_uri": iss + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, _ *http.Request) {
		var signer jose.Signer
		var err error
		if p.alg == jose.HS256 {
			signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: p.hmac}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		} else {
			signer, err = jose.NewSigner(jose.SigningKey{Algorithm: p.alg, Key: p.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		payload, _ := json.Marshal(p.claims(iss))
		obj, err := signer.Sign(payload)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		raw, _ := obj.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "x", "token_type": "Bearer", "id_token": raw, "expires_in": 3600})
	})
	return p
}

// TestVerifyRefusesBrokenTokens: every ID token a reviewer of such code
// tries is refused with a message, and a good one gives the claims.
func TestVerifyRefusesBrokenTokens(t *testing.T) {
	bp := newBrokenProvider(t)
	p, err := New(Config{Issuer: bp.srv.URL, ClientID: "termgate", RedirectURL: "http://127.0.0.1/oidc/callback"})
	if err != nil {
		t.Fatal(err)
	}
	pend := NewPending()
	good := func(iss string) map[string]any {
		return map[string]any{"iss": iss, "aud": "termgate", "sub": "u1", "email": "alice@example.com", "email_verified": true,
			"groups": []string{"ops"}, "nonce": pend.Nonce, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	}
	with := func(k string, v any) func(string) map[string]any {
		return func(iss string) map[string]any {
			c := good(iss)
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
			return c
		}
	}
	ctx := context.Background()
	bp.claims = good
	c, err := p.Exchange(ctx, "code", pend)
	if err != nil || c.Email != "alice@example.com" || len(c.Groups) != 1 || c.Groups[0] != "ops" || c.Subject != "u1" || c.Issuer != bp.srv.URL || !c.EmailVerified {
		t.Fatalf("a good token: %+v, %v", c, err)
	}
	// L5 (red team round 4): only a boolean true verifies the email; a
	// missing claim (Entra ID v2), a false or a string "true" leaves the
	// email unverified (it names the account, and matches no emails:
	// rule).
	for name, v := range map[string]any{"missing": nil, "false": false, "the string true": "true", "a number": 1} {
		bp.claims = with("email_verified", v)
		c, err := p.Exchange(ctx, "code", pend)
		if err != nil || c.EmailVerified || c.Email != "alice@example.com" {
			t.Errorf("email_verified %s: %+v, %v; want the email, unverified", name, c, err)
		}
	}
	for name, tc := range map[string]struct {
		claims func(string) map[string]any
		want   string
	}{
		"another client's token": {with("aud", "someone-else"), "audience"},
		"another issuer":         {with("iss", "https://evil.example"), "different provider"},
		"expired":                {with("exp", time.Now().Add(-time.Hour).Unix()), "expired"},
		"another nonce":          {with("nonce", "replayed"), "nonce"},
		"no nonce":               {with("nonce", nil), "nonce"},
		"no email":               {with("email", nil), "no email"},
		"no subject":             {with("sub", ""), "subject"},
		"too many groups":        {with("groups", make([]string, 65)), "more than termgate keeps"},
	} {
		bp.claims = tc.claims
		if _, err := p.Exchange(ctx, "code", pend); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	// Groups that are no list of strings give no groups (and so no
	// group's rules), not a failure.
	bp.claims = with("groups", 42)
	if c, err := p.Exchange(ctx, "code", pend); err != nil || len(c.Groups) != 0 {
		t.Errorf("malformed groups: %+v, %v", c, err)
	}
	bp.claims = with("groups", nil)
	if c, err := p.Exchange(ctx, "code", pend); err != nil || len(c.Groups) != 0 {
		t.Errorf("no groups claim: %+v, %v", c, err)
	}
	// A token signed with an algorithm the provider does not use (HS256
	// with the public key's bytes, the classic confusion) is refused.
	bp.claims, bp.alg, bp.hmac = good, jose.HS256, []byte("a-secret-that-is-long-enough-for-hs256!!")
	if _, err := p.Exchange(ctx, "code", pend); err == nil {
		t.Error("an HS256 token was believed")
	}
}

// TestProviderDown: discovery fails with ErrUnavailable, and is not
// retried for every request.
func TestProviderDown(t *testing.T) {
	p, err := New(Config{Issuer: "http://127.0.0.1:1/dex", ClientID: "termgate", RedirectURL: "http://127.0.0.1/oidc/callback"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.AuthURL(context.Background(), NewPending()); err == nil || !strings.Contains(err.Error(), "unavailable") {
			t.Fatalf("AuthURL with the provider down: %v", err)
		}
	}
	if _, err := New(Config{Issuer: "ftp://x", ClientID: "a", RedirectURL: "http://x/cb"}); err == nil {
		t.Error("an ftp issuer was accepted")
	}
}
