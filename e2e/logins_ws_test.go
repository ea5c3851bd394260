package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// The WebSocket's login= end to end (CONTRACT.md "Named sessions and
// logins"), against a real engine: a token with logins=app (token file
// option) attaches with login=app and its shell runs as app; a login the
// token does not list is 403 with the decision's sentence; the admin
// token (no logins=: the default user) attaching to app's session is
// refused, naming the login to use; and the token's default login is its
// first listed one.
func TestLoginsWebSocket(t *testing.T) {
	t.Parallel()
	needHolder(t) // logins go through the holder binary
	g := newGateway(t, options{containers: []string{"web-wslogin"}})
	name := g.name("web-wslogin")
	addUsers(t, g.prefix+"web-wslogin")

	w := g.wsAttach(t, tokLogins, name, "name=tab&login=app")
	w.send("echo WHO-$(id -un)-$(pwd)-.")
	w.expect(`WHO-app-/home/app-\.`)
	// A reset ends everything app's shell started (root cannot read an
	// app process's environment, so the kill finds it through its root
	// parent), and the new shell is app's too.
	w.send("sleep 4711 & echo BG-$!-.")
	w.expect(`BG-[0-9]+-\.`)
	if code, body := g.request(t, http.MethodPost, "/api/instances/"+name+"/terminal/reset?name=tab", tokLogins, nil); code != http.StatusOK {
		t.Fatalf("reset of app's session: %d %s", code, body)
	}
	if ps := dockerExec(t, g.prefix+"web-wslogin", "ps -o pid,user,args | grep '[s]leep 4711' || true"); ps != "" {
		t.Errorf("app's background job outlived the reset:\n%s", ps)
	}
	w.send("echo AGAIN-$(id -un)-.")
	w.expect(`AGAIN-app-\.`)

	refused := func(token, query, want string) {
		t.Helper()
		_, resp, err := g.dialWS(t, name, query, bearer(g.tokens[token]))
		if err == nil {
			t.Fatalf("%s with %s attached, want 403", token, query)
		}
		got := strings.ReplaceAll(describeResponse(resp), `\"`, `"`) // the JSON body's quotes
		if resp == nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(got, want) {
			t.Errorf("%s with %s: %s; want 403 saying %q", token, query, got, want)
		}
	}
	refused(tokLogins, "name=tab2&login=root", `may not be login "root"`)
	refused(tokAdmin, "name=tab&login=app", `may not be login "app"`)
	refused(tokAdmin, "name=tab", `runs as "app"`)

	// Without login=, the token's first login: app.
	d := g.wsAttach(t, tokLogins, name, "name=dflt")
	d.send("echo DFLT-$(id -un)-.")
	d.expect(`DFLT-app-\.`)

	// The HTTP files routes run as the token's default login, or as
	// login= when the token may use it.
	put, err := http.NewRequest(http.MethodPut, g.baseURL+"/api/instances/"+name+"/files?path=/tmp/put-as-app", strings.NewReader("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	put.Header.Set("Authorization", "Bearer "+g.tokens[tokLogins])
	resp, err := g.http.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT as app: %s", resp.Status)
	}
	if got := dockerExec(t, g.prefix+"web-wslogin", "stat -c %U /tmp/put-as-app"); got != "app\n" {
		t.Errorf("PUT by a token with logins=app wrote a file of %q, want app's", got)
	}
	if code, body := g.request(t, http.MethodGet, "/api/instances/"+name+"/files?path=/etc/hostname&login=root", tokLogins, nil); code != http.StatusForbidden || !strings.Contains(string(body), "login refused") {
		t.Errorf("GET with login=root: %d %s; want 403 login refused", code, body)
	}

	// A reset of a session that does not exist yet starts it as the
	// caller's default login, over HTTP and over SSH.
	if code, body := g.request(t, http.MethodPost, "/api/instances/"+name+"/terminal/reset?name=fresh", tokLogins, nil); code != http.StatusOK {
		t.Fatalf("reset of a new session: %d %s", code, body)
	}
	if out, errOut, code := g.sshRun(t, needOpenSSH(t), keyLogins, nil, "termgate@127.0.0.1", "reset "+name+"+fresh2"); code != 0 {
		t.Fatalf("ssh reset of a new session: %d %s %s", code, out, errOut)
	}
	code, body := g.request(t, "GET", "/api/sessions", tokAdmin, nil)
	if code != 200 || strings.Count(string(body), `"login":"app"`) != 4 {
		t.Errorf("/api/sessions: %d %s; want tab, dflt, fresh and fresh2 as app", code, body)
	}
}
