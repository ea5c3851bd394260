package oidc

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config says which provider and client to use.
type Config struct {
	// Issuer is the provider's issuer URL (discovery at
	// ISSUER/.well-known/openid-configuration).
	Issuer string
	// ClientID and ClientSecret (empty: a public client, PKCE only).
	ClientID, ClientSecret string
	// RedirectURL is where the provider sends the browser back:
	// PUBLIC_URL/oidc/callback.
	RedirectURL string
	// Scopes asked for (default openid email profile groups).
	Scopes []string
	// GroupsClaim names the ID token's groups claim (default "groups").
	GroupsClaim string
	// HTTPClient talks to the provider (default: 10 s timeout).
	HTTPClient *http.Client
}

// Provider is a configured provider.
type Provider struct {
	cfg Config

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *gooidc.IDTokenVerifier
	tried    time.Time     // the last failed discovery
	lastErr  error         // its error
	inflight chan struct{} // closed when the running discovery ends
}

// retryAfter spaces discoveries of a provider that did not answer.
const retryAfter = 5 * time.Second

// New checks cfg; it does not contact the provider.
func New(cfg Config) (*Provider, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--oidc-issuer %q: it must be an http(s) URL, as the provider's discovery document names it", cfg.Issuer)
	}
	if cfg.ClientID == "" {
		return nil, errors.New("--oidc-client-id is required with --oidc-issuer")
	}
	if _, err := url.Parse(cfg.RedirectURL); err != nil || cfg.RedirectURL == "" {
		return nil, fmt.Errorf("redirect URL %q: set --public-url to how browsers reach the gateway", cfg.RedirectURL)
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{gooidc.ScopeOpenID, "email", "profile", "groups"}
	}
	if !slices.Contains(cfg.Scopes, gooidc.ScopeOpenID) {
		cfg.Scopes = append([]string{gooidc.ScopeOpenID}, cfg.Scopes...)
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Provider{cfg: cfg}, nil
}

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.cfg.Issuer }

// Name is how the page names the provider ("Sign in with NAME"): the
// issuer's host.
func (p *Provider) Name() string {
	u, _ := url.Parse(p.cfg.Issuer)
	return u.Host
}

// ErrUnavailable wraps a discovery that failed: the provider did not
// answer or answered nonsense.
var ErrUnavailable = errors.New("the identity provider is unavailable")

// ready returns the OAuth2 config and the verifier, discovering them first
// if needed.
func (p *Provider) ready(ctx context.Context) (*oauth2.Config, *gooidc.IDTokenVerifier, error) {
	for {
		p.mu.Lock()
		if p.oauth != nil {
			o, v := p.oauth, p.verifier
			p.mu.Unlock()
			return o, v, nil
		}
		if time.Since(p.tried) < retryAfter && p.lastErr != nil {
			err := p.lastErr
			p.mu.Unlock()
			return nil, nil, err
		}
		if wait := p.inflight; wait != nil {
			p.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		p.inflight = done
		p.mu.Unlock()

		prov, err := gooidc.NewProvider(gooidc.ClientContext(ctx, p.cfg.HTTPClient), p.cfg.Issuer)
		p.mu.Lock()
		p.inflight = nil
		close(done)
		if err != nil {
			p.tried, p.lastErr = time.Now(), fmt.Errorf("%w (%s): %v", ErrUnavailable, p.cfg.Issuer, err)
			err = p.lastErr
			p.mu.Unlock()
			return nil, nil, err
		}
		p.oauth = &oauth2.Config{
			ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
			Endpoint: prov.Endpoint(), RedirectURL: p.cfg.RedirectURL, Scopes: p.cfg.Scopes,
		}
		p.verifier = prov.Verifier(&gooidc.Config{ClientID: p.cfg.ClientID})
		p.mu.Unlock()
	}
}

// Pending is one sign-in in flight: what the browser carries (in a signed
// cookie) from the redirect to the provider back to the callback.
type Pending struct {
	State, Nonce, Verifier string
}

// NewPending makes the random state, nonce and PKCE verifier of a
// sign-in.
func NewPending() Pending {
	return Pending{State: random(24), Nonce: random(24), Verifier: oauth2.GenerateVerifier()}
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// AuthURL is where the browser goes to sign in.
func (p *Provider) AuthURL(ctx context.Context, pend Pending) (string, error) {
	o, _, err := p.ready(ctx)
	if err != nil {
		return "", err
	}
	return o.AuthCodeURL(pend.State, gooidc.Nonce(pend.Nonce), oauth2.S256ChallengeOption(pend.Verifier)), nil
}

// Claims are what termgate takes from a verified ID token.
type Claims struct {
	// Issuer and Subject name the account for good (an email can change
	// hands): remembered SSH keys are keyed by them.
	Issuer  string
	Subject string
	Email   string
	// EmailVerified: the provider says the email is the account's
	// (email_verified true; a missing claim or a string is not). Only a
	// verified email matches a policies: emails: rule.
	EmailVerified bool
	Groups        []string
	// Expiry is the ID token's.
	Expiry time.Time
}

// Limits on what a provider may put in a token that termgate keeps in a
// cookie: a provider (or an account at it) with more is refused with a
// message rather than making the cookie too large.
const (
	maxGroups   = 64
	maxClaimLen = 256
)

// Exchange trades the callback's code for tokens and verifies the ID token
// (signature, issuer, audience, expiry, nonce).
func (p *Provider) Exchange(ctx context.Context, code string, pend Pending) (Claims, error) {
	o, v, err := p.ready(ctx)
	if err != nil {
		return Claims{}, err
	}
	ctx = gooidc.ClientContext(ctx, p.cfg.HTTPClient)
	tok, err := o.Exchange(ctx, code, oauth2.VerifierOption(pend.Verifier))
	if err != nil {
		return Claims{}, fmt.Errorf("the provider refused the sign-in code: %v", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return Claims{}, errors.New("the provider sent no ID token: is the openid scope allowed for this client?")
	}
	return p.verify(ctx, v, raw, pend.Nonce)
}

func (p *Provider) verify(ctx context.Context, v *gooidc.IDTokenVerifier, raw, nonce string) (Claims, error) {
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return Claims{}, fmt.Errorf("the ID token did not verify: %v", err)
	}
	if nonce != "" && idt.Nonce != nonce {
		return Claims{}, errors.New("the ID token's nonce is not this sign-in's: start again")
	}
	var all map[string]any
	if err := idt.Claims(&all); err != nil {
		return Claims{}, fmt.Errorf("the ID token's claims: %v", err)
	}
	c := Claims{Issuer: idt.Issuer, Subject: idt.Subject, Expiry: idt.Expiry}
	if e, ok := all["email"].(string); ok {
		c.Email = e
	}
	c.EmailVerified, _ = all["email_verified"].(bool)
	switch g := all[p.cfg.GroupsClaim].(type) {
	case []any:
		for _, x := range g {
			if s, ok := x.(string); ok {
				c.Groups = append(c.Groups, s)
			}
		}
	case string:
		c.Groups = []string{g}
	}
	if len(c.Groups) > maxGroups || len(c.Email) > maxClaimLen || len(c.Subject) > maxClaimLen || len(c.Issuer) > maxClaimLen*4 || slices.ContainsFunc(c.Groups, func(s string) bool { return len(s) > maxClaimLen }) {
		return Claims{}, fmt.Errorf("the ID token carries more than termgate keeps (%d groups of at most %d bytes each)", maxGroups, maxClaimLen)
	}
	if c.Subject == "" {
		return Claims{}, errors.New("the ID token has no subject")
	}
	if c.Email == "" {
		return Claims{}, errors.New("the ID token has no email: ask for the email scope (--oidc-scopes) or use an account with one")
	}
	c.Email = strings.ToLower(c.Email)
	return c, nil
}
