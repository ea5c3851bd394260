package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/termgate/termgate/oidc"
	"github.com/termgate/termgate/sshd"
)

// signIn builds the OpenID Connect provider from the --oidc-* flags and
// --public-url (nil without --oidc-issuer). Nothing contacts the provider
// yet: discovery happens at the first sign-in, and is retried.
func signIn(o *options) (*oidc.Provider, bool, error) {
	if o.oidcIssuer == "" {
		if len(o.policies) > 0 {
			return nil, false, errors.New("the config file has policies: but no --oidc-issuer: policies say what signed-in identities may do; set --oidc-issuer or remove them")
		}
		return nil, false, nil
	}
	if o.publicURL == "" {
		return nil, false, errors.New("--oidc-issuer needs --public-url (how browsers reach the gateway, e.g. https://ops.example.com): the provider sends them back to PUBLIC_URL/oidc/callback")
	}
	pub, err := url.Parse(o.publicURL)
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" {
		return nil, false, fmt.Errorf("--public-url %q: use the http(s) URL browsers reach the gateway at", o.publicURL)
	}
	if len(o.policies) == 0 {
		return nil, false, errors.New("--oidc-issuer without policies: in the config file nobody who signs in may do anything; add rules such as policies: [{groups: [ops], instances: [\"*\"]}]")
	}
	var secret string
	if o.oidcSecretFile != "" {
		b, err := os.ReadFile(o.oidcSecretFile)
		if err != nil {
			return nil, false, fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
		if secret == "" {
			return nil, false, fmt.Errorf("--oidc-client-secret-file %s is empty", o.oidcSecretFile)
		}
	}
	p, err := oidc.New(oidc.Config{
		Issuer: o.oidcIssuer, ClientID: o.oidcClientID, ClientSecret: secret,
		RedirectURL: strings.TrimSuffix(pub.String(), "/") + "/oidc/callback",
		Scopes:      o.oidcScopes, GroupsClaim: o.oidcGroupsClaim,
	})
	return p, pub.Scheme == "https", err
}

// sshSignIn is the SSH half of single sign-on (nil without a provider): a
// key no authorized_keys line accepts signs in through the browser, at
// PUBLIC_URL/ssh/CODE, and is remembered for --oidc-key-ttl.
func sshSignIn(o *options, p *oidc.Provider) *sshd.SignIn {
	if p == nil || o.oidcSSH == "off" {
		return nil
	}
	base := strings.TrimSuffix(o.publicURL, "/")
	return &sshd.SignIn{
		Broker: oidc.NewBroker(), Keys: oidc.NewKeys(100000), Policies: o.policies,
		URL:      func(code string) string { return base + "/ssh/" + code },
		Provider: p.Name(), Required: o.oidcSSH == "required",
	}
}
