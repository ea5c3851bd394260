package websock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// writeCert writes a self-signed certificate for 127.0.0.1 named cn, and
// its key, to dir/cert.pem and dir/key.pem; it returns a pool trusting it.
func writeCert(t *testing.T, dir, cn string) *x509.CertPool {
	t.Helper()
	_, _, pool := termtest.WriteCert(t, dir, cn)
	return pool
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	pool := writeCert(t, dir, "first")
	certs, err := LoadCertFiles(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := sessions.New(sessions.Config{Backend: newFakeBackend("web1"), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = reg.Shutdown(ctx)
	})
	// A MinVersion below 1.2 in the caller's config is raised.
	cfg := certs.Config()
	cfg.MinVersion = tls.VersionTLS10
	srv, err := New(Config{Registry: reg, Tokens: testTokens, Logger: quietLog(), TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !srv.TLS() {
		t.Fatal("TLS() is false")
	}
	addr := serve(t, srv)
	base := "https://" + addr
	clientTLS := &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}}
	tr := &http.Transport{TLSClientConfig: clientTLS, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: waitFor}

	// Login over TLS: the cookie is Secure; HTTP/2 is not offered.
	req, _ := http.NewRequest("POST", base+"/api/login", strings.NewReader(url.Values{"token": {tokAll}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %s", resp.Status)
	}
	cookie := resp.Cookies()[0]
	if !cookie.Secure || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie over TLS: %+v", cookie)
	}
	if resp.ProtoMajor != 1 || resp.TLS.NegotiatedProtocol == "h2" || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("%s, ALPN %q, version %x", resp.Proto, resp.TLS.NegotiatedProtocol, resp.TLS.Version)
	}
	checkSecurityHeaders(t, "login over TLS", resp.Header)

	// wss with the cookie from the https origin; the http origin of the
	// same host and port is another origin.
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: waitFor}
	wsURL := "wss://" + addr + termPath
	c, resp, err := d.Dial(wsURL, withCookie(cookie, base))
	if err != nil {
		t.Fatalf("wss with the cookie: %v (%s)", err, respText(resp))
	}
	w := &wsClient{t: t, c: c}
	w.event("attached")
	w.hangUp()
	if c, resp, err := d.Dial(wsURL, withCookie(cookie, "http://"+addr)); err == nil {
		c.Close()
		t.Error("wss from the http origin accepted")
	} else if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("wss from the http origin: %v", err)
	}

	// TLS 1.1 and plain HTTP get nowhere.
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}
	plain, err := http.Get("http://" + addr + "/api/sessions")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: %s", plain.Status)
		}
	}

	// Reload picks up a renewed certificate for new connections; a broken
	// pair keeps the old one.
	pool2 := writeCert(t, dir, "second")
	if err := certs.Reload(); err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool2})
	if err != nil {
		t.Fatalf("after reload: %v", err)
	}
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "second" {
		t.Errorf("certificate after reload: %q", cn)
	}
	conn.Close()
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := certs.Reload(); err == nil || !strings.Contains(err.Error(), "key.pem") {
		t.Errorf("reload of a broken pair: %v", err)
	}
	conn, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool2})
	if err != nil {
		t.Fatalf("after a failed reload: %v", err)
	}
	conn.Close()
}

func TestTLSConfigErrors(t *testing.T) {
	reg, err := sessions.New(sessions.Config{Backend: newFakeBackend()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Shutdown(context.Background())
	if _, err := New(Config{Registry: reg, Tokens: testTokens, TLS: &tls.Config{}}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("TLS without a certificate: %v", err)
	}
	dir := t.TempDir()
	if _, err := LoadCertFiles(filepath.Join(dir, "none.pem"), filepath.Join(dir, "none.key")); err == nil || !strings.Contains(err.Error(), "none.pem") {
		t.Errorf("missing files: %v", err)
	}
}
