package termtest

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

// The certificate loads with its key and verifies for 127.0.0.1 against
// the returned pool, and only there.
func TestWriteCert(t *testing.T) {
	certFile, keyFile, pool := WriteCert(t, t.TempDir(), "termtest")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("verify for 127.0.0.1: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"}); err == nil {
		t.Error("the certificate verified for example.com")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), DNSName: "127.0.0.1"}); err == nil {
		t.Error("the certificate verified without its pool")
	}
}
