// Package keys holds termgate's identities and credentials: the SSH host
// key, the SSH authorized keys, the HTTP API tokens and the state directory
// they live in.
//
// Both listeners authenticate through this package and get back an Identity:
// sshd calls KeyStore.Authorize (or CAStore.AuthorizeCert for a certificate)
// from its public-key callback, the HTTP server
// calls TokenStore.Check with a bearer token. The Identity says which
// instances the credential may attach to or reset (Identity.May) and, for SSH
// keys, whether interactive terminals are allowed (Identity.NoPTY).
//
// # Files
//
//   - The host key (LoadOrCreateHostKey) is an ed25519 key in OpenSSH PEM
//     format, created with mode 0600 on first start and reused byte for byte
//     afterwards. An existing key file is never replaced: a key file that is
//     unreadable, corrupt, passphrase-protected or accessible by group or
//     others is an error that says what to do.
//   - authorized_keys (ParseAuthorizedKeys, LoadAuthorizedKeys) is OpenSSH's
//     format. Accepted options: instances="GLOB[,GLOB...]" and read-only
//     (termgate's own; read-only sets Identity.ReadOnly), from="PATTERN-LIST", restrict, pty, no-pty, no-port-forwarding,
//     no-agent-forwarding, no-X11-forwarding, no-user-rc and the
//     port-forwarding, agent-forwarding, X11-forwarding and user-rc
//     permissions (no-ops: the gateway never forwards nor runs rc files). Any
//     other option (command=, environment=, cert-authority, expiry-time=, ...)
//     and any malformed value fail closed: the line is reported, and
//     Authorize refuses the key (ErrKeyRefused) when it reaches that line
//     before a line that accepts the key, so a later plain line for the same
//     key cannot lift a restriction termgate could not honour. Certificates
//     are not supported. SeedAuthorizedKeys creates a missing file from
//     ~/.ssh/*.pub on first run.
//   - The trusted user CA file (ParseUserCAs, LoadUserCAs, CAStore;
//     --trusted-user-ca-keys) holds CA public keys in authorized_keys
//     format (only the cert-authority option is allowed) and "@revoked KEY"
//     lines. UserCAs.AuthorizeCertAt accepts a user certificate signed by a
//     listed CA, valid at that time, whose key and CA are not revoked, whose
//     only critical option is source-address (enforced) and which has at
//     least one principal: the principals are the instance patterns of the
//     Identity (as instances=), the key ID its Name, and without the
//     permit-pty extension it is NoPTY; the extension termgate-read-only
//     (CertReadOnly) makes it ReadOnly. The SSH user name is not matched
//     against the principals.
//   - The token file (ParseTokens, LoadTokens, LoadOrCreateTokens) holds one
//     bearer token per line: "TOKEN [NAME] [instances=GLOB[,GLOB...]]
//     [read-only]" (read-only sets Identity.ReadOnly). A missing file is
//     created with one random token on first start. As with authorized_keys
//     options, a line termgate cannot read exactly as written (an unknown
//     or misspelt option such as instance= or Instances=, a quoted option,
//     a NAME with '=', a quote or a glob character) is refused, and its
//     token does not work, also on a later line: a typo never leaves a
//     token unrestricted.
//
// Bad lines never reject a whole file: they are skipped and reported as
// warnings ("line N: ..."). Warnings quote or sanitise the untrusted text
// they show, so they are safe to log, and never show a token.
//
// # from=
//
// from= is honoured as OpenSSH does with UseDNS=no (its default): the
// client's "host name" is its IP address in text form, so host name patterns
// such as *.example.com never match (termgate does no DNS look-ups). IP
// addresses, CIDR networks (10.0.0.0/8, 2001:db8::/32), * and ? wildcards
// over the address text and !negation work as in OpenSSH: any matching
// negated entry refuses, otherwise one matching entry accepts. A list with an
// empty entry or an invalid network (host bits set, bad mask) never matches,
// and is reported when the file is loaded. A key whose from= does not match
// falls through to a later line with the same key, as in OpenSSH.
//
// # Reloading
//
// KeyStore, CAStore and TokenStore hold the current set behind an atomic pointer and
// reload it when the file's size, modification time, mode or inode changes
// (polled every Config.Interval, so editors that replace the file are seen)
// and on Reload, which cmd calls on SIGHUP. A reload that fails to read the
// file keeps the previous set and logs why; a file that was removed means an
// empty set (nothing is authorized). Close stops the polling goroutine and
// waits for it. Config.OnReload is told after every reload that made a new
// set current; Recheck (with KeyStore.Authorize, CAStore.AuthorizeCert or
// TokenStore.ByHash) then says whether a live client may stay: its
// credential still there, its instance still allowed, and no terminal or
// write access lost.
//
// # File permissions
//
// authorized_keys, the token file and the CA file are refused, not used,
// when anyone but root and the gateway's user could change them (writable
// by group or others, owned by another user, or a directory or symbolic
// link on the way others could swap; see internal/fileperm): a store does
// not open, and a reload keeps the previous set and logs why.
//
// This package never logs except through the Logger given to a store.
package keys
