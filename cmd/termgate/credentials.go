package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/fileperm"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sshd"
	"github.com/termgate/termgate/websock"
)

// credentials is what the gateway authenticates with and against: the host
// key, authorized keys, API tokens, login cookie key, trusted user CAs and
// TLS certificate. Generated ones are created on first start.
type credentials struct {
	hostKey gossh.Signer
	// holderSecret keys the durable holders (with --durable; see
	// keys.HolderSecret): the same for every gateway with this host key.
	holderSecret []byte
	keys         *keys.KeyStore
	tokens       *keys.TokenStore
	newToken     string // set when the token file was just created
	cookieKey    []byte
	userCAs      sshd.CertAuthorizer // nil: certificates are refused
	tls          *tls.Config         // nil: plain HTTP

	reloaders []interface{ Reload() error } // SIGHUP
	closers   []func() error                // file watchers

	// recheck runs after every reload of keys, tokens or CAs (set once the
	// registry exists): revocation must reach live sessions too.
	recheck atomic.Pointer[func()]
}

// reloaded is every file store's OnReload.
func (c *credentials) reloaded() {
	if f := c.recheck.Load(); f != nil {
		(*f)()
	}
}

func loadCredentials(o *options, log *slog.Logger) (_ *credentials, err error) {
	c := &credentials{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if err := checkStateDir(o.stateDir, log); err != nil {
		return nil, err
	}
	var created bool
	if c.hostKey, created, err = keys.LoadOrCreateHostKey(o.hostKey); err != nil {
		return nil, err
	}
	if created {
		log.Info("generated SSH host key", "path", o.hostKey)
	}
	if o.durable {
		if c.holderSecret, err = keys.HolderSecret(o.hostKey); err != nil {
			return nil, fmt.Errorf("--durable: %w", err)
		}
	}
	seedAuthorizedKeys(o.authorizedKeys, log)
	if c.keys, err = keys.NewKeyStore(keys.Config{Path: o.authorizedKeys, Logger: log, OnReload: c.reloaded}); err != nil {
		return nil, err
	}
	c.watch(c.keys)
	if _, c.newToken, err = keys.LoadOrCreateTokens(o.tokenFile); err != nil {
		return nil, err
	}
	if c.tokens, err = keys.NewTokenStore(keys.Config{Path: o.tokenFile, Logger: log, OnReload: c.reloaded}); err != nil {
		return nil, err
	}
	c.watch(c.tokens)
	cookiePath := filepath.Join(o.stateDir, cookieKeyFile)
	if c.cookieKey, created, err = loadOrCreateCookieKey(cookiePath); err != nil {
		return nil, err
	}
	if created {
		log.Info("generated the browser login cookie key", "path", cookiePath)
	}
	if o.trustedUserCAKeys != "" {
		if _, err := os.Stat(o.trustedUserCAKeys); err != nil {
			return nil, fmt.Errorf("--trusted-user-ca-keys: %w", err)
		}
		cas, err := keys.NewCAStore(keys.Config{Path: o.trustedUserCAKeys, Logger: log, OnReload: c.reloaded})
		if err != nil {
			return nil, err
		}
		c.watch(cas)
		c.userCAs = cas
	}
	if o.tlsCert != "" {
		cert, err := websock.LoadCertFiles(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, err
		}
		c.tls = cert.Config()
		c.reloaders = append(c.reloaders, cert)
	}
	return c, nil
}

// checkStateDir refuses a state directory that anyone but root and the
// gateway's user could change (writable by group or others, owned by
// another user, or reached through a directory or symbolic link they could
// swap): whoever can write it can replace the host key, authorized_keys and
// the tokens. A group-writable directory on the way is only logged (see
// fileperm). The gateway creates the directory 0700, so a first start passes.
func checkStateDir(dir string, log *slog.Logger) error {
	warnings, err := fileperm.Default().Dir(dir)
	for _, w := range warnings {
		log.Warn("the state directory may not be safe: " + w)
	}
	if err != nil {
		return fmt.Errorf("--state-dir refused: %w", err)
	}
	return nil
}

// seedAuthorizedKeys gives a first start without authorized_keys the
// invoking user's ~/.ssh/*.pub, and says what it did.
func seedAuthorizedKeys(path string, log *slog.Logger) {
	if home, err := os.UserHomeDir(); err == nil {
		seeded, err := keys.SeedAuthorizedKeys(path, home)
		if err != nil {
			log.Warn("could not seed authorized_keys", "err", err)
		}
		if len(seeded) > 0 {
			log.Info("created authorized_keys from your ~/.ssh/*.pub", "path", path, "keys", seeded)
		}
	}
	if _, err := os.Stat(path); err != nil {
		log.Warn("no authorized_keys: nobody can log in over SSH until you add a public key", "path", path)
	}
}

// watch registers a file-backed store for SIGHUP reloads and close.
func (c *credentials) watch(s interface {
	Reload() error
	Close() error
}) {
	c.reloaders = append(c.reloaders, s)
	c.closers = append(c.closers, s.Close)
}

func (c *credentials) reload(log *slog.Logger) {
	for _, r := range c.reloaders {
		if err := r.Reload(); err != nil {
			log.Warn("reload on SIGHUP", "err", err)
		}
	}
	log.Info("reloaded authorized_keys, tokens, trusted user CA keys and the TLS certificate (if any)")
}

func (c *credentials) close() {
	for _, f := range c.closers {
		_ = f()
	}
}
