package websock

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestHostAllowList: issue 18 item 11. A login and a WebSocket upgrade
// whose Host is a name the gateway is not reached by (what a page reached
// by DNS rebinding sends, with a matching Origin) get 421 and a message
// naming --public-host, and no cookie; localhost, IP addresses and the
// configured names (with any port, or the one given) are answered.
func TestHostAllowList(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) {
		c.PublicHosts = []string{"gw.example", "ops.example:8443", "[2001:db8::1]"}
	})
	port := e.base[strings.LastIndex(e.base, ":")+1:]
	login := func(host string) *http.Response {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, "POST", e.base+"/api/login", strings.NewReader("token="+tokAll))
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
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for host, ok := range map[string]bool{
		"127.0.0.1:" + port: true, "localhost:" + port: true, "[::1]:" + port: true, "localhost:9000": true,
		"10.1.2.3:8080": true, "gw.example:" + port: true, "GW.example": true, "ops.example:8443": true,
		"[2001:db8::1]:8080":   true,
		"evil.example:" + port: false, "evil.example": false, "ops.example:" + port: false,
		"gw.example.evil.example": false, "localhost.evil.example": false,
	} {
		resp := login(host)
		switch {
		case ok && resp.StatusCode != http.StatusOK:
			t.Errorf("login with Host %s: %s, want 200", host, respText(resp))
		case !ok && (resp.StatusCode != http.StatusMisdirectedRequest || len(resp.Cookies()) != 0):
			t.Errorf("login with Host %s: %s with %d cookies, want 421 and none", host, respText(resp), len(resp.Cookies()))
		case !ok && !strings.Contains(respText(resp), "--public-host"):
			t.Errorf("login with Host %s: %s, want a message naming --public-host", host, respText(resp))
		}
	}

	h := bearerHeader(tokAll)
	h.Set("Host", "evil.example:"+port)
	h.Set("Origin", "http://evil.example:"+port)
	if _, resp, err := e.dial("/api/instances/web1/terminal", h); err == nil || resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("upgrade with Host evil.example: %v %s, want 421", err, respText(resp))
	}
	h.Set("Host", "gw.example:"+port)
	h.Set("Origin", "http://gw.example:"+port)
	if _, resp, err := e.dial("/api/instances/web1/terminal", h); err != nil {
		t.Fatalf("upgrade with Host gw.example: %v %s", err, respText(resp))
	}
	// A script with a bearer token is not concerned on other routes.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/api/sessions", nil)
	req.Host = "gateway.internal"
	req.Header.Set("Authorization", "Bearer "+tokAll)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/sessions with Host gateway.internal: %d", resp.StatusCode)
	}
}

// TestPublicHostsRefusesBadEntries: what --public-host cannot hold is
// refused at start.
func TestPublicHostsRefusesBadEntries(t *testing.T) {
	for _, bad := range []string{"http://gw.example", "gw.example/x", ":8080", "gw example"} {
		if _, err := newHosts([]string{bad}); err == nil {
			t.Errorf("public host %q accepted", bad)
		}
	}
}
