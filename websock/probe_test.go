package websock

import (
	"net/http"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// The terminal route without the upgrade answers why the attach would be
// refused, with the status and message the handshake would have had: the
// page asks it after a failed handshake, whose status a browser cannot
// read (the cap on sessions, an instance that does not exist, a bad
// name); when the attach would be accepted it says so with a 400.
func TestTerminalProbeSaysWhyAnAttachIsRefused(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), func(c *sessions.Config) { c.MaxPerInstance = 2 }, nil)
	probe := func(path string, status int) string {
		t.Helper()
		resp := e.do("GET", path, bearerHeader(tokAll), nil)
		defer resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("GET %s: HTTP %d %s, want %d", path, resp.StatusCode, respText(resp), status)
		}
		return errorMessage(t, resp.Body)
	}
	const base = "/api/instances/web1/terminal"
	if msg := probe(base+"?name=one", http.StatusBadRequest); !strings.Contains(msg, "would be accepted") {
		t.Fatalf("a probe of an acceptable attach says %q", msg)
	}
	e.attach(base)
	e.attach(base + "?name=one")
	if n := len(e.reg.Sessions()); n != 2 {
		t.Fatalf("%d sessions after two attaches (the probe must start none)", n)
	}
	// The cap: the handshake and the probe refuse alike.
	refusedMsg := e.refused(base+"?name=two", bearerHeader(tokAll), http.StatusTooManyRequests)
	if msg := probe(base+"?name=two", http.StatusTooManyRequests); msg != refusedMsg || !strings.Contains(msg, "already has 2 sessions") {
		t.Fatalf("the probe says %q, the handshake %q", msg, refusedMsg)
	}
	// An existing session is not a new one: still accepted.
	if msg := probe(base+"?name=one", http.StatusBadRequest); !strings.Contains(msg, "would be accepted") {
		t.Fatalf("a probe of an existing session past the cap says %q", msg)
	}
	if msg := probe("/api/instances/nope/terminal", http.StatusNotFound); !strings.Contains(msg, "nope") {
		t.Fatalf("a probe of a missing instance says %q", msg)
	}
	if msg := probe(base+"?name=Bad", http.StatusBadRequest); strings.Contains(msg, "would be accepted") {
		t.Fatalf("a probe of a bad session name says %q", msg)
	}
	if n := len(e.reg.Sessions()); n != 2 {
		t.Fatalf("%d sessions after the probes, want 2", n)
	}
}
