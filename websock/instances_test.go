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

// Each row says whether this caller may only watch the instance (issue 22
// item 7: the page marks such rows before they are opened).
func TestInstancesListSaysReadOnly(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	for tok, want := range map[string]string{tokAll: "db1=false web1=false web2=false", tokRO: "web1=true web2=true"} {
		resp := e.do("GET", "/api/instances", bearerHeader(tok), nil)
		var out []struct {
			Name     string `json:"name"`
			ReadOnly *bool  `json:"read_only"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, in := range out {
			if in.ReadOnly == nil {
				t.Fatalf("token %.4s: %s has no read_only field", tok, in.Name)
			}
			got = append(got, in.Name+"="+map[bool]string{true: "true", false: "false"}[*in.ReadOnly])
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("token %.4s: %s, want %s", tok, g, want)
		}
	}
}
