package main

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadOrCreateCookieKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", cookieKeyFile)
	key, created, err := loadOrCreateCookieKey(path)
	if err != nil || !created || len(key) != 32 {
		t.Fatalf("first start: %d bytes, created %v, %v", len(key), created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	again, created, err := loadOrCreateCookieKey(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("second start: created %v, same %v, %v", created, bytes.Equal(again, key), err)
	}
	other, _, err := loadOrCreateCookieKey(filepath.Join(t.TempDir(), cookieKeyFile))
	if err != nil || bytes.Equal(other, key) {
		t.Fatalf("another state directory: same key %v, %v", bytes.Equal(other, key), err)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}

	for name, tc := range map[string]struct {
		data []byte
		mode os.FileMode
		want string
	}{
		"readable by others": {key, 0o644, "chmod 600"},
		"too short":          {key[:31], 0o600, "is not 32 bytes"},
		"too long":           {append(bytes.Clone(key), '\n'), 0o600, "is not 32 bytes"},
		"empty":              {nil, 0o600, "is not 32 bytes"},
	} {
		p := filepath.Join(t.TempDir(), cookieKeyFile)
		if err := os.WriteFile(p, tc.data, tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		if _, _, err := loadOrCreateCookieKey(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, tc.data) {
			t.Errorf("%s: the file was changed", name)
		}
	}
}

// A browser login made before a restart still works after it (same state
// directory); a token removed from the token file ends it.
func TestRunKeepsBrowserLoginsAcrossRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	dir := t.TempDir()
	t.Setenv("HOME", dir) // nothing seeded from the real ~/.ssh
	const token = "tok-0123456789abcdef0123456789"
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(state, "api_token")
	if err := os.WriteFile(tokenFile, []byte(token+" alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	sessions := func(addr string, c *http.Cookie) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/sessions", nil)
		req.AddCookie(c)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	addr, stop := startRun(t, state)
	resp, err := client.PostForm("http://"+addr+"/api/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %s, cookies %+v", resp.Status, resp.Cookies())
	}
	cookie := resp.Cookies()[0]
	if strings.Contains(cookie.Value, token) {
		t.Fatal("the cookie carries the token")
	}
	stop()

	addr, stop = startRun(t, state)
	if status := sessions(addr, cookie); status != http.StatusOK {
		t.Fatalf("the login after a restart: HTTP %d, want 200", status)
	}
	if err := os.WriteFile(tokenFile+".new", []byte("another-token-0123456789 bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tokenFile+".new", tokenFile); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); sessions(addr, cookie) != http.StatusUnauthorized; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the login of a removed token still works")
		}
	}
	stop()
}

// startRun runs the gateway (local backend) on loopback with the state in
// state; stop ends it and waits.
func startRun(t *testing.T, state string) (addr string, stop func()) {
	t.Helper()
	g := startGateway(t, "", "--state-dir", state, "--backend", "local", "--local-instances", "web1")
	return g.http, g.stop
}
