package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A durable session run as a login (issue 36 items 2 and 4): the holder
// starts app's shell; after a gateway kill -9 and a restart, the next
// gateway adopts it with its login: a reattach as app lands in the same
// shell (same PID, its job alive), still app's, the listing says app, and
// the default user is still refused it, naming the login.
func TestDurableLogin(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-durlogin"}})
	name := d.name("web-durlogin")
	addUsers(t, d.prefix+"web-durlogin")

	w := d.wsAttach(t, tokLogins, name, "name=dur&login=app")
	expectDurable(t, d.gateway, name, w.attached.Session, true) // its only session
	w.send("sleep 1003 & echo PID-$$-$(id -un)-.")
	pid := w.expect(`PID-([0-9]+)-app-\.`)[1]
	d.kill9(t)
	w.waitClosed()

	d.restart(t)
	again := d.wsAttach(t, tokLogins, name, "name=dur&login=app")
	if again.attached.Session != w.attached.Session || again.attached.New {
		t.Errorf("after the crash: %s, want session %s adopted (new:false)", again.attached.raw, w.attached.Session)
	}
	again.send("echo AGAIN-$$-$(id -un)-.")
	if got := again.expect(`AGAIN-([0-9]+)-([a-z0-9]+)-\.`); got[1] != pid || got[2] != "app" {
		t.Errorf("after the crash the shell is %s as %s, want %s as app", got[1], got[2], pid)
	}
	expectJob(t, name, "sleep 1003")

	code, body := d.request(t, "GET", "/api/sessions", tokAdmin, nil)
	var list []struct{ Instance, Name, Login string }
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list) != 1 ||
		list[0].Instance != name || list[0].Name != "dur" || list[0].Login != "app" {
		t.Errorf("/api/sessions after adoption: %d %s; want %s+dur as app", code, body, name)
	}
	_, resp, err := d.dialWS(t, name, "name=dur", bearer(d.tokens[tokAdmin]))
	if got := strings.ReplaceAll(describeResponse(resp), `\"`, `"`); err == nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(got, `runs as "app"`) {
		t.Errorf("the default user attaching to app's adopted session: %v %s; want 403 naming app", err, got)
	}
}
