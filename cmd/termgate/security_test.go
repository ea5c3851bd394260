package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

func TestSecurityFlags(t *testing.T) {
	o, err := parseFlags(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.auditLog != "" || o.tlsCert != "" || o.tlsKey != "" || o.httpRateLimit != 20 {
		t.Errorf("defaults: audit %q tls %q %q rate %v", o.auditLog, o.tlsCert, o.tlsKey, o.httpRateLimit)
	}
	o, err = parseFlags([]string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--http-rate-limit", "0"}, env(map[string]string{
		"TERMGATE_AUDIT_LOG": "/var/log/termgate-audit.jsonl",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if o.auditLog != "/var/log/termgate-audit.jsonl" || o.tlsCert != "c.pem" || o.tlsKey != "k.pem" || o.httpRateLimit != 0 {
		t.Errorf("parsed: %+v", o)
	}
	if requestRate(0) >= 0 || requestRate(20) != 20 || requestBurst(20) != 100 || requestBurst(0.1) != 1 {
		t.Errorf("rate mapping: %v %v %v %v", requestRate(0), requestRate(20), requestBurst(20), requestBurst(0.1))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-key", "k.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--http-rate-limit", "-1"}, `--http-rate-limit "-1" must be 0 (off)`},
	} {
		if _, err := parseFlags(tc.args, env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The printed browser URL carries a new token only in its fragment, which
// browsers never send, and says https when the listener speaks TLS.
func TestAnnounceKeepsTheTokenOutOfRequests(t *testing.T) {
	o := &options{publicHost: "gw.example", tokenFile: "/state/api_token", backend: "local"}
	ssh := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}
	web := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		https bool
		want  string
	}{
		{false, "http://gw.example:8443/#token=SECRET"},
		{true, "https://gw.example:8443/#token=SECRET"},
	} {
		var out bytes.Buffer
		announce(&out, true, o, quiet, ssh, web, testHostKey(t), "SECRET", tc.https)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("https=%v: %q, want %s", tc.https, out.String(), tc.want)
		}
		for _, f := range strings.Fields(out.String()) {
			if u, err := url.Parse(f); err == nil && u.Host != "" && (strings.Contains(u.RawQuery, "SECRET") || strings.Contains(u.Path, "SECRET")) {
				t.Errorf("the token is in a part of %q that is sent to the server", f)
			}
		}
	}
}

func TestAuditSessionEnd(t *testing.T) {
	var buf bytes.Buffer
	end := auditSessionEnd(audit.New(&buf))
	end(sessions.Info{Instance: "web1", Session: "s1", BytesOut: 42}, sessions.ErrIdle)
	end(sessions.Info{Instance: "web1", Session: "s2"}, sessions.ErrInstanceGone)
	end(sessions.Info{Instance: "web1", Session: "s3", Durable: true}, sessions.ErrRestart)    // left running
	end(sessions.Info{Instance: "web1", Session: "s3", Durable: true}, sessions.ErrHolderLost) // likewise
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, m)
	}
	if len(got) != 2 || got[0]["event"] != audit.Reap || got[0]["session"] != "s1" || got[0]["bytes_out"] != 42.0 ||
		got[1]["event"] != audit.SessionEnd || got[1]["cause"] != sessions.ErrInstanceGone.Error() {
		t.Errorf("events: %v", got)
	}
}

// The whole gateway with --tls-cert/--tls-key and --audit-log: it serves
// HTTPS only (TLS 1.2 at least), a login over it gets a Secure cookie, and
// the audit file gets the login without the token.
func TestRunServesTLSAndWritesTheAuditLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	dir := t.TempDir()
	certFile, keyFile, pool := termtest.WriteCert(t, dir, "termgate test")
	const token = "tok-0123456789abcdef0123456789"
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "api_token"), []byte(token+" alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditFile := filepath.Join(dir, "audit.jsonl")
	g := startGateway(t, dir, "--state-dir", state, "--backend", "local", "--local-instances", "web1",
		"--tls-cert", certFile, "--tls-key", keyFile, "--audit-log", auditFile)
	addr := g.http
	if !strings.Contains(g.logs.String(), `"https":"`) {
		t.Fatalf("listening line without https:\n%s", g.logs.String())
	}

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("POST", "https://"+addr+"/api/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("login over TLS: %s, cookies %+v", resp.Status, resp.Cookies())
	}

	// Plain HTTP on the TLS port gets nothing it can use.
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/api/sessions"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %s", resp.Status)
		}
	}
	// TLS 1.1 is refused.
	old := &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}
	if c, err := tls.Dial("tcp", addr, old); err == nil {
		c.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}

	var audited string
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(audited, `"event":"auth_success"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("audit log: %q", audited)
		}
		b, err := os.ReadFile(auditFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		audited = string(b)
	}
	if !strings.Contains(audited, `"who":"alice"`) || strings.Contains(audited, token) || strings.Contains(g.logs.String(), token) {
		t.Errorf("audit log %q (and the main log) must name alice and never hold the token", audited)
	}
	if fi, err := os.Stat(auditFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode: %v %v", fi.Mode(), err)
	}
}
