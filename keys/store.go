package keys

import (
	"net"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// KeyStore is the current authorized keys file, reloaded when it changes
// (see Config) and on Reload. Its methods are safe for concurrent use.
type KeyStore struct {
	w watched[AuthorizedKeys]
}

// NewKeyStore loads cfg.Path (a missing file is an empty set, logged as a
// warning) and starts watching it. It fails when the file exists but cannot
// be read. Close it when done.
func NewKeyStore(cfg Config) (*KeyStore, error) {
	s := &KeyStore{}
	if err := s.w.start(cfg, "authorized keys", LoadAuthorizedKeys, (*AuthorizedKeys).Len); err != nil {
		return nil, err
	}
	return s, nil
}

// Authorize checks key against the current set; see AuthorizedKeys.Authorize.
func (s *KeyStore) Authorize(key gossh.PublicKey, remote net.Addr) (Identity, error) {
	return s.w.cur.Load().Authorize(key, remote)
}

// Current returns the current set.
func (s *KeyStore) Current() *AuthorizedKeys { return s.w.cur.Load() }

// Reload reads the file now (cmd calls it on SIGHUP). On error the previous
// set stays current.
func (s *KeyStore) Reload() error { return s.w.reload(true) }

// Close stops watching and waits for the watching goroutine. It always
// returns nil.
func (s *KeyStore) Close() error {
	s.w.close()
	return nil
}

// TokenStore is the current token file, reloaded when it changes (see
// Config) and on Reload. Its methods are safe for concurrent use.
type TokenStore struct {
	w watched[Tokens]
}

// NewTokenStore loads cfg.Path (a missing file is an empty set, logged as a
// warning) and starts watching it. Call LoadOrCreateTokens first to create
// the file on first start. Close it when done.
func NewTokenStore(cfg Config) (*TokenStore, error) {
	s := &TokenStore{}
	if err := s.w.start(cfg, "API tokens", LoadTokens, (*Tokens).Len); err != nil {
		return nil, err
	}
	return s, nil
}

// Check checks a presented token against the current set; see Tokens.Check.
func (s *TokenStore) Check(presented string) (Identity, bool) {
	return s.w.cur.Load().Check(presented)
}

// Current returns the current set.
func (s *TokenStore) Current() *Tokens { return s.w.cur.Load() }

// Reload reads the file now (cmd calls it on SIGHUP). On error the previous
// set stays current.
func (s *TokenStore) Reload() error { return s.w.reload(true) }

// Close stops watching and waits for the watching goroutine. It always
// returns nil.
func (s *TokenStore) Close() error {
	s.w.close()
	return nil
}

// CAStore is the current trusted user CA file (--trusted-user-ca-keys),
// reloaded when it changes (see Config) and on Reload. Its methods are safe
// for concurrent use.
type CAStore struct {
	w watched[UserCAs]
}

// NewCAStore loads cfg.Path (a missing file trusts no CA, logged as a
// warning) and starts watching it. It fails when the file exists but cannot
// be read. Close it when done.
func NewCAStore(cfg Config) (*CAStore, error) {
	s := &CAStore{}
	if err := s.w.start(cfg, "trusted user CA keys", LoadUserCAs, (*UserCAs).Len); err != nil {
		return nil, err
	}
	return s, nil
}

// AuthorizeCert checks a user certificate against the current file at the
// current time; see UserCAs.AuthorizeCertAt.
func (s *CAStore) AuthorizeCert(cert *gossh.Certificate, remote net.Addr) (Identity, error) {
	return s.w.cur.Load().AuthorizeCertAt(cert, remote, time.Now())
}

// Current returns the current set.
func (s *CAStore) Current() *UserCAs { return s.w.cur.Load() }

// Reload reads the file now (cmd calls it on SIGHUP). On error the previous
// set stays current.
func (s *CAStore) Reload() error { return s.w.reload(true) }

// Close stops watching and waits for the watching goroutine. It always
// returns nil.
func (s *CAStore) Close() error {
	s.w.close()
	return nil
}
