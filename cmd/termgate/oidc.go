package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/termgate/termgate/keys"
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
// PUBLIC_URL/ssh where the code is typed, and is remembered for
// --oidc-key-ttl in the shared sign-in state.
func sshSignIn(o *options, p *oidc.Provider, state *oidc.Store) *sshd.SignIn {
	if p == nil || o.oidcSSH == "off" {
		return nil
	}
	return &sshd.SignIn{
		Broker: oidc.NewBroker(), Keys: state, Policies: o.policies,
		URL:      strings.TrimSuffix(o.publicURL, "/") + "/ssh",
		Provider: p.Name(), Required: o.oidcSSH == "required",
	}
}

// signinStateDir holds the shared sign-in state under --state-dir
// (docs/CONFIGURATION.md, "Single sign-on").
const signinStateDir = "signins"

// openSigninState opens the shared sign-in state (nil without a
// provider): logouts and remembered SSH keys, in STATE_DIR/signins (or
// the Secret --signin-state-secret), authenticated with a key derived
// from the host key, so every gateway sharing the host key and the
// directory (or the Secret) shares them. onChange rechecks the attached
// clients.
func openSigninState(ctx context.Context, o *options, p *oidc.Provider, log *slog.Logger, onChange func()) (*oidc.Store, error) {
	if p == nil {
		return nil, nil
	}
	secret, err := keys.HolderSecret(o.hostKey)
	if err != nil {
		return nil, fmt.Errorf("--oidc-issuer: the sign-in state is keyed with the host key: %w", err)
	}
	cfg := oidc.StoreConfig{Dir: filepath.Join(o.stateDir, signinStateDir), Key: oidc.StateKey(secret), Logger: log, OnChange: onChange}
	if o.signinStateSecret != "" {
		if cfg.Records, err = signinSecret(ctx, o, log); err != nil {
			return nil, err
		}
	}
	return oidc.NewStore(cfg)
}
