package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/termtest"
)

// Scenario 9: SIGTERM tells the attached clients, ends every session (no
// process left in the containers) and exits within 10 seconds.
func TestSIGTERM(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-a", "web-b"}})
	a, b := g.name("web-a"), g.name("web-b")

	w := g.ws(t, tokAdmin, a)
	s := g.attach(t, keyAdmin, b, 80, 24)
	// A detached session too: it must end as well.
	gone := g.attach(t, keyAdmin, a, 80, 24)
	for _, tm := range []*term{s, gone} {
		tm.send("sleep 1001 &")
		tm.send("setsid sleep 1002 &")
		tm.roundTrip()
	}
	gone.close()
	g.waitClients(t, a, 1)
	for _, name := range []string{a, b} {
		if n := len(findProcesses(t, name, -1, "sleep 1001", "sleep 1002")); n != 2 {
			t.Fatalf("%s runs %d of the shell's two jobs before the SIGTERM: %v", name, n, processes(t, name))
		}
	}

	took := g.stop(t)
	t.Logf("the gateway exited %s after SIGTERM", took)

	ev := w.nextEvent()
	if ev.Type != "error" || !strings.Contains(ev.Message, "shutting down") {
		t.Errorf("the WebSocket client got %s, want an error event saying the gateway is shutting down", ev.raw)
	}
	if code := w.waitClosed(); code != websocket.CloseGoingAway && code != websocket.CloseNormalClosure {
		t.Errorf("the WebSocket ended with %d (%v), want a close frame (1001)", code, w.readErr)
	}
	code := termtest.ExitStatus(t, s.wait())
	if notice := regexp.MustCompile(`\[termgate\][^\r\n]*shutting down`); !notice.MatchString(s.errOut.String() + s.out.String()) {
		t.Errorf("the SSH client got no notice of the shutdown; stderr %q, stdout %q", s.errOut, s.out.String()[s.seen:])
	}
	if code == 0 {
		t.Errorf("the SSH session ended with status 0, want non-zero")
	}
	for _, name := range []string{a, b} {
		if left := markedProcesses(t, name); len(left) > 0 {
			t.Errorf("after the shutdown %s still runs marked processes: %q", name, left)
		}
		if left := findProcesses(t, name, -1, "sleep 1001", "sleep 1002"); len(left) > 0 {
			t.Errorf("after the shutdown %s still runs the shells' jobs: %v", name, left)
		}
	}
}
