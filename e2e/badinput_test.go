package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/termtest"
)

// Scenario 7: bad input of every kind is refused with the contract's
// answer, and the gateway carries on serving afterwards.
func TestBadInput(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1", "db1", "web-ctl", "web-big", "web-size"}})
	web, db := g.name("web-1"), g.name("db1")
	unknown := g.name("web-nope") // matches the web key's pattern, but no such container
	badNames := []string{"../etc", "a/b", strings.Repeat("a", 200), strings.Repeat("a", 129), "-oProxyCommand=x", ".hidden", "a b", "é"}
	longest := strings.Repeat("a", 128) // valid, and no such container
	notFound := func(name string) string { return `instance "` + name + `" not found or not running` }

	// Sessions on web-1 and db1, for the listing and permission checks.
	admin := g.ws(t, tokAdmin, db)
	dbSession := admin.attached.Session
	g.ws(t, tokAdmin, web)

	t.Run("refusals", func(t *testing.T) {
		t.Run("ssh invalid names", func(t *testing.T) {
			t.Parallel()
			for _, name := range badNames {
				cases := []struct{ user, cmd string }{{name, ""}, {name, "reset"}}
				if !strings.Contains(name, " ") { // "reset a b" is a usage error
					cases = append(cases, struct{ user, cmd string }{"me", "reset " + name})
				}
				for _, c := range cases {
					r := g.ssh(t, keyAdmin, c.user, c.cmd)
					if r.code != 1 || !strings.Contains(r.stderr, "invalid instance name") {
						t.Errorf("ssh %.20q@ %q: status %d, stderr %q; want 1 and an invalid-name message", c.user, c.cmd, r.code, r.stderr)
					}
				}
			}
			// With a PTY, as a terminal user would.
			tm := g.attach(t, keyAdmin, "../etc", 80, 24)
			if code := termtest.ExitStatus(t, tm.wait()); code != 1 || !strings.Contains(tm.errOut.String(), "invalid instance name") {
				t.Errorf("interactive ssh ../etc@: status %d, stderr %q", code, tm.errOut)
			}
		})
		t.Run("ssh unknown instance", func(t *testing.T) {
			t.Parallel()
			for _, name := range []string{unknown, longest} {
				for _, c := range []struct{ user, cmd string }{{name, ""}, {"me", "reset " + name}, {name, "reset"}} {
					r := g.ssh(t, keyAdmin, c.user, c.cmd)
					if r.code != 1 || !strings.Contains(r.stderr, notFound(name)) {
						t.Errorf("ssh %.20s@ %q: status %d, stderr %q; want 1 and %q", c.user, c.cmd, r.code, r.stderr, notFound(name))
					}
				}
			}
		})
		t.Run("http invalid and unknown names", func(t *testing.T) {
			t.Parallel()
			for _, name := range badNames {
				if status, body := g.request(t, http.MethodPost, "/api/instances/"+url.PathEscape(name)+"/terminal/reset", tokAdmin, nil); status != http.StatusBadRequest {
					t.Errorf("POST reset %.20q: %d %s, want 400", name, status, body)
				}
				if _, resp, err := g.dialWS(t, name, "", bearer(g.tokens[tokAdmin])); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
					t.Errorf("websocket to %.20q: %v (%s), want 400", name, err, describeResponse(resp))
				}
			}
			for _, name := range []string{unknown, longest} {
				if status, body := g.request(t, http.MethodPost, "/api/instances/"+name+"/terminal/reset", tokAdmin, nil); status != http.StatusNotFound || errorMessage(body) != notFound(name) {
					t.Errorf("POST reset %.20s: %d %s, want 404 not found", name, status, body)
				}
				if _, resp, err := g.dialWS(t, name, "", bearer(g.tokens[tokAdmin])); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
					t.Errorf("websocket to %.20s: %v (%s), want 404", name, err, describeResponse(resp))
				}
			}
		})
		t.Run("unauthorized key", func(t *testing.T) {
			t.Parallel()
			if c, err := g.dialSSH(t, keyStranger, web); err == nil {
				c.Close()
				t.Fatalf("a key that is not in authorized_keys logged in")
			} else if !strings.Contains(err.Error(), "unable to authenticate") {
				t.Errorf("stranger key: %v, want an authentication failure", err)
			}
		})
		t.Run("limited key", func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct{ user, cmd string }{{db, ""}, {"me", "reset " + db}, {db, "reset"}} {
				r := g.ssh(t, keyWeb, c.user, c.cmd)
				if r.code != 1 || !strings.Contains(r.stderr, notFound(db)) {
					t.Errorf("web key: ssh %s@ %q: status %d, stderr %q; want 1 and %q", c.user, c.cmd, r.code, r.stderr, notFound(db))
				}
			}
			if info, ok := g.session(t, db); !ok || info.Session != dbSession {
				t.Errorf("after the web key's resets, db1's session is %+v (present %v), want %s untouched", info, ok, dbSession)
			}
			r := g.ssh(t, keyWeb, "me", "list")
			if r.code != 0 || strings.Contains(r.stdout, db) || !strings.Contains(r.stdout, web) {
				t.Errorf("web key: list: status %d, %q; want %s listed and %s not", r.code, r.stdout, web, db)
			}
			// What it may use, it can.
			tm := g.attach(t, keyWeb, web, 80, 24)
			tm.roundTrip()
		})
		t.Run("tokens", func(t *testing.T) {
			t.Parallel()
			for _, h := range []http.Header{nil, bearer("wrong-token-0123456789"), {"Authorization": {"Basic YWRtaW46YWRtaW4="}}} {
				status, body := g.request(t, http.MethodGet, "/api/sessions", "", h)
				if status != http.StatusUnauthorized {
					t.Errorf("GET /api/sessions with %v: %d %s, want 401", h, status, body)
				}
				status, body = g.request(t, http.MethodPost, "/api/instances/"+web+"/terminal/reset", "", h)
				if status != http.StatusUnauthorized {
					t.Errorf("POST reset with %v: %d %s, want 401", h, status, body)
				}
				if _, resp, err := g.dialWS(t, web, "", h); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("websocket with %v: %v (%s), want 401", h, err, describeResponse(resp))
				}
			}
			status, body := g.request(t, http.MethodPost, "/api/instances/"+db+"/terminal/reset", tokWeb, nil)
			if status != http.StatusNotFound || errorMessage(body) != notFound(db) {
				t.Errorf("limited token: POST reset db1: %d %s, want 404 with %q", status, body, notFound(db))
			}
			if _, resp, err := g.dialWS(t, db, "", bearer(g.tokens[tokWeb])); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("limited token: websocket to db1: %v (%s), want 404", err, describeResponse(resp))
			}
			seen := map[string]bool{}
			for _, s := range g.sessions(t, tokWeb) {
				seen[s.Instance] = true
			}
			if seen[db] || !seen[web] {
				t.Errorf("limited token: /api/sessions lists %v; want %s and not %s", seen, web, db)
			}
			if info, ok := g.session(t, db); !ok || info.Session != dbSession {
				t.Errorf("after the limited token's reset, db1's session is %+v, want %s untouched", info, dbSession)
			}
		})
		t.Run("cookie from a foreign origin", func(t *testing.T) {
			t.Parallel()
			cookie := g.login(t)
			own := http.Header{"Cookie": {cookie}, "Origin": {g.baseURL}}
			w, resp, err := g.dialWS(t, web, "", own)
			if err != nil {
				t.Fatalf("websocket with the login cookie from the gateway's own origin: %v (%s)", err, describeResponse(resp))
			}
			if ev := w.nextEvent(); ev.Type != "attached" {
				t.Fatalf("websocket with the login cookie: %s, want attached", ev.raw)
			}
			for _, h := range []http.Header{
				{"Cookie": {cookie}, "Origin": {"http://evil.example"}},
				{"Cookie": {cookie}, "Origin": {"null"}},
				{"Cookie": {cookie}}, // a cookie alone does not open a WebSocket
			} {
				if _, resp, err := g.dialWS(t, web, "", h); err == nil || resp == nil || resp.StatusCode/100 != 4 {
					t.Errorf("websocket with the login cookie and Origin %q: %v (%s), want refused", h.Get("Origin"), err, describeResponse(resp))
				}
			}
			h := http.Header{"Cookie": {cookie}, "Origin": {"http://evil.example"}}
			if status, body := g.request(t, http.MethodPost, "/api/instances/"+web+"/terminal/reset", "", h); status/100 != 4 {
				t.Errorf("POST reset with the login cookie from a foreign origin: %d %s, want refused", status, body)
			}
		})
		t.Run("malformed control messages", func(t *testing.T) {
			t.Parallel()
			w := g.ws(t, tokAdmin, g.name("web-ctl"))
			w.control(`{"type":"resize","cols":100,"rows":40}`)
			// The resize reaches the terminal through its own engine call,
			// which typed input may overtake: wait until the shell sees it.
			w.send(`until [ "$(stty size)" = "40 100" ]; do sleep 0.1; done; stty size`)
			w.expect(`\r\n40 100\r\n`)
			for _, msg := range []string{`{"type":`, `not json`, `[1,2]`, `{"cols":5}`, `{"type":"bogus"}`,
				`{"type":"resize","cols":0,"rows":0}`, `{"type":"resize","cols":100000,"rows":100000}`, `{"type":"resize","cols":"80","rows":24}`} {
				w.control(msg)
				if ev := w.nextEvent(); ev.Type != "error" || ev.Message == "" {
					t.Errorf("control %s: got %s, want an error event", msg, ev.raw)
				}
			}
			w.send("stty size")
			w.expect(`\r\n40 100\r\n`) // the refused resizes changed nothing
			w.roundTrip()
		})
		t.Run("oversized frame", func(t *testing.T) {
			t.Parallel()
			w := g.ws(t, tokAdmin, g.name("web-big"))
			werr := w.conn.WriteMessage(websocket.BinaryMessage, bytes.Repeat([]byte("x"), 2<<20))
			if code := w.waitClosed(); code != websocket.CloseMessageTooBig {
				t.Errorf("after a 2 MiB frame: closed with %d (%v; write: %v), want 1009", code, w.readErr, werr)
			}
			g.ws(t, tokAdmin, g.name("web-big")).roundTrip()
		})
		t.Run("pty sizes", func(t *testing.T) {
			t.Parallel()
			name := g.name("web-size")
			first := g.attach(t, keyAdmin, name, 0, 0) // size unknown, new session: 80x24
			first.send("stty size")
			first.expect(`\r\n24 80\r\n`)
			huge := g.attach(t, keyAdmin, name, 100000, 100000)
			huge.expectErr(`window size`)
			huge.send("stty size")
			huge.expect(`\r\n24 80\r\n`)
			if err := huge.sess.WindowChange(100000, 100000); err != nil {
				t.Fatal(err)
			}
			if err := first.sess.WindowChange(0, 0); err != nil {
				t.Fatal(err)
			}
			huge.send("stty size")
			huge.expect(`\r\n24 80\r\n`)
			first.expect(`\r\n24 80\r\n`)
		})
		t.Run("forwarding refused", func(t *testing.T) {
			t.Parallel()
			c := g.dial(t, keyAdmin, "me")
			if conn, err := c.Dial("tcp", g.httpAddr); err == nil {
				conn.Close()
				t.Errorf("a direct-tcpip channel to %s was opened", g.httpAddr)
			}
			if l, err := c.Listen("tcp", "127.0.0.1:0"); err == nil {
				l.Close()
				t.Errorf("a tcpip-forward request was accepted")
			}
			if _, _, err := c.OpenChannel("x11", nil); err == nil {
				t.Errorf("an x11 channel was opened")
			}
			// The connection is still usable.
			s, err := c.NewSession()
			if err != nil {
				t.Fatalf("after the refusals: %v", err)
			}
			defer s.Close()
			out, err := s.Output("help")
			if err != nil || !strings.Contains(string(out), "usage:") {
				t.Errorf("help after the refusals: %v, %q", err, out)
			}
		})
	})

	// The gateway carries on.
	tm := g.attach(t, keyAdmin, web, 80, 24)
	tm.roundTrip()
	w := g.ws(t, tokAdmin, web)
	w.roundTrip()
	cmd, word := marker("end")
	tm.send(cmd)
	w.expect(regexp.QuoteMeta(word))
}

// login exchanges the admin token for a browser login cookie and returns
// it as a Cookie header value.
func (g *gateway) login(t *testing.T) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.baseURL+"/api/login", strings.NewReader(url.Values{"token": {g.tokens[tokAdmin]}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", g.baseURL)
	resp, err := g.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
		t.Fatalf("POST /api/login: %s", describeResponse(resp))
	}
	c := resp.Cookies()[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("the login cookie %v is not HttpOnly and SameSite=Strict", c)
	}
	return c.Name + "=" + c.Value
}

// errorMessage is the message of a JSON error body ({"error":"..."}).
func errorMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error
}
