package websock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// withDefaults checks cfg and fills in what it leaves zero.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Registry == nil {
		return cfg, errors.New("websock: no session registry")
	}
	if cfg.Tokens == nil {
		return cfg, errors.New("websock: no token checker")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case cfg.CookieKey == nil:
		cfg.CookieKey = newCookieKey()
	case len(cfg.CookieKey) < CookieKeyLen:
		return cfg, fmt.Errorf("websock: CookieKey has %d bytes, want at least %d", len(cfg.CookieKey), CookieKeyLen)
	default:
		cfg.CookieKey = bytes.Clone(cfg.CookieKey)
	}
	setDefault(&cfg.LoginTTL, 12*time.Hour)
	setDefault(&cfg.WriteTimeout, 10*time.Second)
	setDefault(&cfg.PongTimeout, 60*time.Second)
	setDefault(&cfg.PingInterval, 25*time.Second)
	if cfg.PingInterval >= cfg.PongTimeout {
		return cfg, errors.New("websock: PingInterval must be shorter than PongTimeout")
	}
	if cfg.RequestRate == 0 { // negative: no limit
		cfg.RequestRate = 20
	}
	setDefault(&cfg.RequestBurst, 100)
	if cfg.AuthFailures == 0 { // negative: no lock-out
		cfg.AuthFailures = 10
	}
	setDefault(&cfg.AuthFailureEvery, 30*time.Second)
	setDefault(&cfg.MaxUploadSize, defaultMaxUpload)
	setDefault(&cfg.MaxBodyBytes, 64<<10)
	setDefault(&cfg.MaxHeaderBytes, 32<<10)
	setDefault(&cfg.HeaderTimeout, 10*time.Second)
	setDefault(&cfg.IdleTimeout, 30*time.Second)
	setDefault(&cfg.MaxConnsPerAddr, defaultMaxConnsPerAddr)
	setDefault(&cfg.MaxConns, defaultMaxConns)
	if cfg.OIDC != nil {
		setDefault(&cfg.OIDCSessionMax, 12*time.Hour)
		setDefault(&cfg.KeyTTL, 12*time.Hour)
	}
	return cfg, nil
}

// setDefault sets *v to def when it is zero or negative.
func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
