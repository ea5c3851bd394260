// Package keys holds termgate's identities and credentials: the SSH host
// key, the SSH authorized keys, the trusted user CAs, the HTTP API tokens,
// the secrets and the state directory they live in.
//
// Both listeners authenticate through this package and get back an
// Identity: sshd calls KeyStore.Authorize (or CAStore.AuthorizeCert for a
// certificate) from its public-key callback, websock calls TokenStore.Check
// with a bearer token (TokenStore.CheckHash for a login cookie), and
// Policies.Identity makes one for a signed-in person. An Identity is its
// Grants (one per credential line or matching policy rule); access.go's
// Identity.On is the one access decision: what the credential may do on
// one instance, with every refusal's sentence and audit reason
// (Access.Decide). Both listeners call it once per request, on the
// instance the request names, and nothing else reads a grant.
//
// The files and their syntax are described once, in README.md
// ("Configuration": authorized_keys options, token file, SSH certificates,
// file permissions); the promises with their tests are in SECURITY.md. The
// rule this package keeps everywhere: a line it cannot honour exactly as
// written fails closed. The line is reported ("line N: ..."), and its key
// or token is refused, also on a later line, so a typo or an unsupported
// option never grants more than the line says. Bad lines never reject a
// whole file, and warnings quote or sanitise the untrusted text they show
// and never show a token.
//
// Files: access.go (the decision), identity.go and policy.go (grants),
// hostkey.go (the ed25519 host key, created 0600 once and reused),
// authorized.go and options.go (authorized_keys), from.go (from= as OpenSSH
// with UseDNS=no), usercas.go (--trusted-user-ca-keys), tokens.go and
// tokenhash.go (the token file; the hash a login cookie carries), seed.go
// (authorized_keys from ~/.ssh/*.pub on first start), holdersecret.go (the
// durable holders' deployment secret, derived from the host key), secret.go
// and files.go (secrets and trust files checked with internal/fileperm),
// statedir.go, recheck.go (may a live client stay after a reload).
//
// Goroutines: each KeyStore, CAStore and TokenStore polls its file
// (Config.Interval, 1 s; watch.go) in one goroutine that Close stops and
// waits for. A change of size, modification time, mode or inode, or Reload
// (SIGHUP), loads the file again; a failed load keeps the previous set and
// logs why once, a removed file means an empty set. Config.OnReload runs
// after every reload that made a new set current, outside the lock.
//
// Locks: the current set sits behind an atomic pointer, so Authorize and
// Check take no lock; watched.mu only serializes loads. This package never
// logs except through the Logger given to a store.
package keys
