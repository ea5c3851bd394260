package websock

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// GET /api/instances lists what the backend runs, filtered by the token's
// instance patterns, with each instance's session when it has one.
func TestInstancesListIsFilteredAndCarriesSessions(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	e.attach("/api/instances/web2/terminal")
	list := func(h http.Header) []sessions.InstanceInfo {
		t.Helper()
		resp := e.do("GET", "/api/instances", h, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/instances: %s", respText(resp))
		}
		var out []sessions.InstanceInfo
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	names := func(l []sessions.InstanceInfo) string {
		var n []string
		for _, in := range l {
			n = append(n, in.Name)
		}
		return strings.Join(n, ",")
	}
	all := list(bearerHeader(tokAll))
	if got := names(all); got != "db1,web1,web2" {
		t.Fatalf("all instances %q", got)
	}
	if all[2].Session == nil || all[2].Session.Clients != 1 || all[1].Session != nil {
		t.Errorf("sessions in the list: %+v", all)
	}
	if got := names(list(bearerHeader(tokWeb))); got != "web1,web2" {
		t.Errorf("limited token sees %q, want web1,web2", got)
	}
	if resp := e.do("GET", "/api/instances", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: HTTP %d, want 401", resp.StatusCode)
	}
}
