package websock

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
)

// serverTLS returns the TLS configuration Serve uses: a copy of cfg with
// MinVersion at least TLS 1.2 and HTTP/1.1 only (gorilla/websocket upgrades
// HTTP/1.1 connections; browsers open a separate HTTP/1.1 connection for a
// WebSocket when the server offers no HTTP/2). Nil stays nil.
func serverTLS(cfg *tls.Config) (*tls.Config, error) {
	if cfg == nil {
		return nil, nil
	}
	if len(cfg.Certificates) == 0 && cfg.GetCertificate == nil && cfg.GetConfigForClient == nil {
		return nil, errors.New("websock: TLS needs a certificate (Certificates or GetCertificate)")
	}
	c := cfg.Clone()
	if c.MinVersion < tls.VersionTLS12 {
		c.MinVersion = tls.VersionTLS12
	}
	c.NextProtos = []string{"http/1.1"}
	return c, nil
}

// CertFiles is a certificate and key read from PEM files, re-read by
// Reload (on SIGHUP, say, after a renewal); connections get the latest
// successfully loaded pair.
type CertFiles struct {
	cert, key string
	cur       atomic.Pointer[tls.Certificate]
}

// LoadCertFiles reads the pair once; an unreadable or mismatched pair is
// an error naming the files.
func LoadCertFiles(certFile, keyFile string) (*CertFiles, error) {
	c := &CertFiles{cert: certFile, key: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; on error the previous pair stays in use.
func (c *CertFiles) Reload() error {
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return fmt.Errorf("TLS certificate %s and key %s: %w", c.cert, c.key, err)
	}
	c.cur.Store(&pair)
	return nil
}

// GetCertificate is for tls.Config.GetCertificate.
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// Config returns a server TLS configuration serving c's certificate.
func (c *CertFiles) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
}
