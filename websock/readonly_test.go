package websock

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// TestReadOnlyTokenObserves is issue 12 item 1 over WebSocket and HTTP: a
// read-only token (limited with instances=web*) gets the replay and the
// output; its input (one error event per connection), its resizes and its
// resets (control message: error event; POST: 403) change nothing, also
// after another client's reset moved it to the new session, and its
// refused resets spend no one's reset allowance.
func TestReadOnlyTokenObserves(t *testing.T) {
	be := newFakeBackend("web1", "db1")
	e := newEnv(t, be, nil, nil)
	if status, me := e.whoami(bearerHeader(tokRO)); status != http.StatusOK || !me.ReadOnly {
		t.Fatalf("whoami of the read-only token: %d %+v", status, me)
	}
	if _, me := e.whoami(bearerHeader(tokAll)); me.ReadOnly {
		t.Fatalf("whoami of a writer: %+v", me)
	}
	w, wev := e.attach(termPath + query("cols", "90", "rows", "20"))
	if wev.ReadOnly {
		t.Fatal("the writer's attached event says read_only")
	}
	w.input("before\n")
	w.output(0, regexpQuote("before\n"))

	o, resp, err := e.dial(termPath+query("cols", "40", "rows", "10"), bearerHeader(tokRO))
	if err != nil {
		t.Fatalf("observer: %v (%s)", err, respText(resp))
	}
	if ev := o.event("attached"); !ev.ReadOnly {
		t.Fatalf("observer's attached event %+v, want read_only", ev)
	}
	o.output(0, regexpQuote("before\n")) // the replay
	e.waitClients("web1", 2)
	p := be.proc("web1")
	want := sessions.Size{Cols: 90, Rows: 20}

	o.input("rm -rf /\n")
	if ev := o.event("error"); ev.Message != msgReadOnlyInput {
		t.Fatalf("observer's input: error %q, want %q", ev.Message, msgReadOnlyInput)
	}
	o.input("again\n")
	o.control(`{"type":"resize","cols":50,"rows":12}`)
	for i := 0; i < resetInstanceBurst+1; i++ {
		o.control(`{"type":"reset"}`)
		if ev := o.event("error"); !strings.HasPrefix(ev.Message, readOnlyReset) {
			t.Fatalf("observer's control reset: error %q, want %q", ev.Message, readOnlyReset)
		}
		resp := e.do("POST", "/api/instances/web1/terminal/reset", bearerHeader(tokRO), nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("POST reset with a read-only token: %s, want 403", respText(resp))
		}
		if msg := errorMessage(t, resp.Body); !strings.HasPrefix(msg, readOnlyReset) {
			t.Fatalf("POST reset message %q", msg)
		}
	}
	// Still limited: another instance is not found, for POST and attach.
	if resp := e.do("POST", "/api/instances/db1/terminal/reset", bearerHeader(tokRO), nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST reset db1 with a read-only token limited to web*: %s, want 404", respText(resp))
	}
	e.refused("/api/instances/db1/terminal", bearerHeader(tokRO), http.StatusNotFound)

	// The writer's input is echoed to both (the fake shell echoes what
	// it gets): the observer's never reached the shell.
	mark := w.out.Len()
	w.input("ping\n")
	w.output(mark, regexpQuote("ping\n"))
	o.output(0, regexpQuote("ping\n"))
	if strings.Contains(w.out.String(), "rm -rf") || strings.Contains(w.out.String(), "again") {
		t.Fatalf("the observer's input reached the shell: %q", w.out.String())
	}
	if got := p.currentSize(); got != want {
		t.Fatalf("the shell's size is %+v after an observer attached with 40x10 and resized to 50x12, want %+v", got, want)
	}
	for _, ev := range o.events {
		if ev.Type == "reset" {
			t.Fatal("the observer reset the session")
		}
	}
	errs := 0
	for _, ev := range o.events {
		if ev.Type == "error" && ev.Message == msgReadOnlyInput {
			errs++
		}
	}
	if errs != 1 {
		t.Fatalf("%d input error events, want one per connection", errs)
	}

	// The writer's reset is not refused by the limits (the observer spent
	// none) and carries the observer along, still read-only.
	before := sessionOf(e, "web1")
	w.control(`{"type":"reset"}`)
	w.event("reset")
	o.event("reset")
	e.waitClients("web1", 2)
	if sessionOf(e, "web1") == before {
		t.Fatal("the writer's reset did not happen")
	}
	o.input("after-reset\n")
	mark = w.out.Len()
	w.input("pong\n")
	w.output(mark, regexpQuote("pong\n"))
	o.output(0, regexpQuote("pong\n"))
	if strings.Contains(w.out.String(), "after-reset") {
		t.Fatal("after a reset, the observer's input reached the new shell")
	}
	if got := be.proc("web1").currentSize(); got != want {
		t.Fatalf("the new shell's size %+v, want the writer's %+v", got, want)
	}
	// Both re-attached, in either order.
	att := attachedOf(t, e, tokAll, "web1")
	ro := map[string]bool{}
	for _, a := range att {
		ro[a.Who] = a.ReadOnly
	}
	if len(att) != 2 || !ro["auditor"] || ro["alice"] {
		t.Fatalf("attached after the reset: %+v", att)
	}
}

// TestSessionsListAttached is issue 12 item 2 for GET /api/sessions: each
// session's attached array names who is attached (token name, route,
// address, since, read-only), clients is its length, and a client that
// leaves is gone from it.
func TestSessionsListAttached(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1", "db1"), nil, nil)
	w, _ := e.attach(termPath)
	o, resp, err := e.dial(termPath, bearerHeader(tokRO))
	if err != nil {
		t.Fatalf("observer: %v (%s)", err, respText(resp))
	}
	o.event("attached")
	e.waitClients("web1", 2)

	resp = e.do("GET", "/api/sessions", bearerHeader(tokRO), nil)
	var list []map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list) != 1 {
		t.Fatalf("GET /api/sessions: %v, %d sessions", err, len(list))
	}
	if string(list[0]["clients"]) != "2" {
		t.Fatalf("clients %s, want 2", list[0]["clients"])
	}
	addr := `"127\.0\.0\.1:\d+"`
	since := `"\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)"`
	re := regexp.MustCompile(`^\[\{"who":"alice","via":"websocket","remote":` + addr + `,"since":` + since + `,"read_only":false\},` +
		`\{"who":"auditor","via":"websocket","remote":` + addr + `,"since":` + since + `,"read_only":true\}\]$`)
	if !re.Match(list[0]["attached"]) {
		t.Fatalf("attached = %s", list[0]["attached"])
	}
	o.hangUp()
	e.waitClients("web1", 1)
	if att := attachedOf(t, e, tokAll, "web1"); len(att) != 1 || att[0].Who != "alice" || att[0].ReadOnly {
		t.Fatalf("after the observer left: %+v", att)
	}
	w.hangUp()
	e.waitClients("web1", 0)
	if att := attachedOf(t, e, tokAll, "web1"); att == nil || len(att) != 0 {
		t.Fatalf("nobody attached: %+v, want an empty array", att)
	}
}

// attachedOf is the attached array of instance's session in GET
// /api/sessions.
func attachedOf(t *testing.T, e *env, token, instance string) []sessions.Attached {
	t.Helper()
	resp := e.do("GET", "/api/sessions", bearerHeader(token), nil)
	var list []sessions.Info
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("GET /api/sessions: %v", err)
	}
	for _, in := range list {
		if in.Instance == instance {
			if in.Clients != len(in.Attached) {
				t.Fatalf("clients %d, attached %+v", in.Clients, in.Attached)
			}
			return in.Attached
		}
	}
	t.Fatalf("no session of %s", instance)
	return nil
}

// readOnlyReset starts the access decision's refusal of an observer's
// reset (keys.Access.Decide), on every listener.
const readOnlyReset = "reset refused: this token is read-only on web1"
