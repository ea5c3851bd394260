package websock

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsNeedAnUnlimitedToken: /metrics names every instance with a
// session (and counts its bytes), so a token limited by instances= gets 403
// with a message that says which token will do, through its bearer header
// and through a login cookie; an unlimited token gets the metrics.
func TestMetricsNeedAnUnlimitedToken(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1", "db1"), nil, func(c *Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "termgate_clients{instance=\"db1\"} 1\n")
		})
	})
	resp := e.do("GET", "/metrics", bearerHeader(tokWeb), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("limited token: %s, want 403", respText(resp))
	}
	if msg := errorMessage(t, resp.Body); !strings.Contains(msg, "without instances= limits") {
		t.Errorf("limited token: message %q does not say which token may read the metrics", msg)
	}
	cookie := e.login(tokWeb)
	resp = e.do("GET", "/metrics", withCookie(cookie, ""), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("limited token's login: %s, want 403", respText(resp))
	}
	resp = e.do("GET", "/metrics", bearerHeader(tokAll), nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "db1") {
		t.Errorf("unlimited token: %d %q, want 200 with the metrics", resp.StatusCode, body)
	}
}
