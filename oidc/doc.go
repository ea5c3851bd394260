// Package oidc signs people in with an OpenID Connect provider (contract,
// "Single sign-on"): the authorization-code flow with PKCE, state and
// nonce, the ID token verified by github.com/coreos/go-oidc/v3 against the
// provider's published keys (no JWT code here), and the claims termgate
// uses: subject, email and groups. What a signed-in identity may do is
// keys.Policies'; the browser session is websock's.
//
// Discovery is lazy and retried: a gateway starts while its provider is
// down and signs people in once it answers. A Provider is safe for
// concurrent use; its one lock guards the discovered state and is never
// held across a request to the provider (a second caller waits on the
// first discovery's result instead). It starts no goroutines.
package oidc
