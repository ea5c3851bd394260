package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunChecksTheHost: issue 18 item 11, through the whole gateway: a
// login whose Host is a name not given to --public-host (DNS rebinding)
// gets 421; one by a --public-host name, or by the listener's address,
// gets its cookie.
func TestRunChecksTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	if err := os.WriteFile(filepath.Join(state, "api_token"), []byte(tok+" alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, dir, "--state-dir", state, "--backend", "local", "--local-instances", "web1", "--public-host", "gw.example,ops.example:8443")
	_, port, _ := net.SplitHostPort(g.http)
	for host, want := range map[string]int{
		g.http: http.StatusOK, "localhost:" + port: http.StatusOK, "gw.example:" + port: http.StatusOK, "ops.example:8443": http.StatusOK,
		"evil.example:" + port: http.StatusMisdirectedRequest, "ops.example:" + port: http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest("POST", "http://"+g.http+"/api/login", strings.NewReader("token="+tok))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+host)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want != http.StatusOK) != (len(resp.Cookies()) == 0) {
			t.Errorf("login with Host %s: %d %s (%d cookies), want %d", host, resp.StatusCode, body, len(resp.Cookies()), want)
		}
	}
}

// TestAnnounceFirstPublicHost: the first --public-host is what is
// printed; with a port, that port is the browser's.
func TestAnnounceFirstPublicHost(t *testing.T) {
	ssh := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}
	web := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for hosts, want := range map[string][]string{
		"":                           {"INSTANCE@localhost\n", "http://localhost:8080/ "},
		"gw.example,other.example":   {"INSTANCE@gw.example\n", "http://gw.example:8080/ "},
		"ops.example:443,gw.example": {"INSTANCE@ops.example\n", "http://ops.example:443/ "},
	} {
		var out bytes.Buffer
		announce(&out, false, &options{publicHost: hosts, tokenFile: "/t", backend: "local"}, quiet, ssh, web, testHostKey(t), "", false)
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("--public-host %q: %q, want %q", hosts, out.String(), w)
			}
		}
	}
}
