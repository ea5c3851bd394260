package websock

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
)

// The audit trail: who (token name), from where, which instance and
// session, for each authentication failure, login, attach, reset (POST and
// control message) and detach; refusals say why; no token value anywhere.
func TestAuditTrail(t *testing.T) {
	var buf termtest.SyncBuffer
	e := newEnv(t, newFakeBackend("web1", "db1"), nil, func(c *Config) { c.Audit = audit.New(&buf) })

	// Failures: an invalid token, a token in the URL, an instance the
	// token may not use, a foreign Origin. Then a login, an attach, a reset
	// by control message and one by POST, and a detach.
	e.do("GET", "/api/sessions", bearerHeader(tokAll+"x"), nil)
	e.do("GET", "/api/sessions?token="+tokAll, nil, nil)
	e.refused("/api/instances/db1/terminal", bearerHeader(tokWeb), 404)
	e.refused(termPath, withCookie(&http.Cookie{Name: cookieName, Value: "v"}, "https://evil.example"), 403)
	e.login(tokWeb)

	w, resp, err := e.dial(termPath, bearerHeader(tokWeb))
	if err != nil {
		t.Fatalf("attach: %v (%s)", err, respText(resp))
	}
	first := w.event("attached")
	w.control(`{"type":"reset"}`)
	moved := w.event("reset")
	// The reset is audited when Registry.Reset returns, which may be after
	// the client hears of it.
	waitAudit(t, &buf, audit.Reset)
	if resp := e.do("POST", "/api/instances/web1/terminal/reset", bearerHeader(tokAll), nil); resp.StatusCode != 200 {
		t.Fatalf("reset: %s", respText(resp))
	}
	last := w.event("reset")
	w.hangUp()
	e.waitClients("web1", 0)
	// The detach is audited after the registry has dropped the client.
	waitAudit(t, &buf, audit.Detach)

	type want struct {
		event, via, who, instance, session, reason string
	}
	wants := []want{
		{event: audit.AuthFailure, via: "http", reason: "invalid token"},
		{event: audit.AuthFailure, via: "http", reason: "token in the URL query"},
		{event: audit.AuthSuccess, via: "websocket", who: "webonly", instance: "db1"},
		{event: audit.AuthFailure, via: "websocket", who: "webonly", instance: "db1", reason: "instance not allowed for this token"},
		{event: audit.AuthFailure, via: "websocket", instance: "web1", reason: "origin not allowed"},
		{event: audit.AuthSuccess, via: "http", who: "webonly"},
		{event: audit.AuthSuccess, via: "websocket", who: "webonly", instance: "web1"},
		{event: audit.Attach, via: "websocket", who: "webonly", instance: "web1", session: first.Session},
		{event: audit.Reset, via: "websocket", who: "webonly", instance: "web1", session: moved.Session},
		{event: audit.AuthSuccess, via: "http", who: "alice", instance: "web1"},
		{event: audit.Reset, via: "http", who: "alice", instance: "web1", session: last.Session},
		{event: audit.Detach, via: "websocket", who: "webonly", instance: "web1", session: last.Session},
	}
	got := auditLines(t, &buf)
	if len(got) != len(wants) {
		t.Fatalf("%d audit events, want %d:\n%s", len(got), len(wants), buf.String())
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	for i, w := range wants {
		g := got[i]
		if str(g, "event") != w.event || str(g, "via") != w.via || str(g, "who") != w.who || str(g, "instance") != w.instance ||
			(w.session != "" && str(g, "session") != w.session) || !strings.Contains(str(g, "reason"), w.reason) ||
			!strings.HasPrefix(str(g, "remote"), "127.0.0.1:") || str(g, "time") == "" {
			t.Errorf("event %d: %v\nwant %+v", i, g, w)
		}
	}
	if strings.Contains(buf.String(), tokAll) || strings.Contains(buf.String(), tokWeb) {
		t.Fatalf("the audit trail holds a token:\n%s", buf.String())
	}
}

// waitAudit waits until the audit trail's last event is action.
func waitAudit(t *testing.T, b *termtest.SyncBuffer, action string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if lines := auditLines(t, b); len(lines) > 0 && lines[len(lines)-1]["event"] == action {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event at the end of the audit trail:\n%s", action, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
