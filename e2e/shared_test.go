package e2e

import (
	"regexp"
	"sync"
	"testing"
)

// Scenario 2: the first attach creates the session, later ones join it
// from either listener; an SSH and a WebSocket client attached at once both
// see all output and both can type.
func TestSSHAndWebSocketShareOneSession(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1", "web-race"}})
	name := g.name("web-1")

	w1 := g.ws(t, tokAdmin, name)
	if !w1.attached.New {
		t.Fatalf("first attach: %s, want new:true", w1.attached.raw)
	}
	w2 := g.ws(t, tokAdmin, name)
	if w2.attached.New || w2.attached.Session != w1.attached.Session {
		t.Fatalf("second attach: %s, want new:false in session %s", w2.attached.raw, w1.attached.Session)
	}
	closeWS(w2)
	g.waitClients(t, name, 1)

	s := g.attach(t, keyAdmin, name, 80, 24)
	info := g.waitClients(t, name, 2)
	if info.Session != w1.attached.Session {
		t.Fatalf("the SSH client is in session %s, the WebSocket client in %s", info.Session, w1.attached.Session)
	}

	wsCmd, wsWord := marker("fromws")
	w1.send(wsCmd)
	w1.expect(regexp.QuoteMeta(wsWord))
	s.expect(regexp.QuoteMeta(wsWord))

	sshCmd, sshWord := marker("fromssh")
	s.send(sshCmd)
	s.expect(regexp.QuoteMeta(sshWord))
	w1.expect(regexp.QuoteMeta(sshWord))

	// One shell: both ask for its PID and get the same answer.
	pid := s.pid()
	w1.send("echo wspid=$$")
	if got := w1.expect(`wspid=(\d+)`)[1]; atoi(t, got) != pid {
		t.Fatalf("the WebSocket client's shell is %s, the SSH client's %d", got, pid)
	}
	if marked := markedProcesses(t, name); len(marked) != 1 {
		t.Errorf("%s runs %d gateway shells, want 1: %q", name, len(marked), marked)
	}

	// Two first attaches at once, one per listener, make one session.
	race := g.name("web-race")
	var wg sync.WaitGroup
	var raced *wsClient
	var racedErr error
	wg.Go(func() { raced, _, racedErr = g.dialWS(t, race, "", bearer(g.tokens[tokAdmin])) })
	rs := g.attach(t, keyAdmin, race, 80, 24)
	wg.Wait()
	if racedErr != nil {
		t.Fatalf("websocket to %s: %v", race, racedErr)
	}
	ev := raced.nextEvent()
	info = g.waitClients(t, race, 2)
	if ev.Type != "attached" || ev.Session != info.Session {
		t.Errorf("simultaneous first attaches: the WebSocket client got %s, the session table says session %s", ev.raw, info.Session)
	}
	rs.roundTrip()
	if marked := markedProcesses(t, race); len(marked) != 1 {
		t.Errorf("after simultaneous first attaches %s runs %d gateway shells, want 1: %q", race, len(marked), marked)
	}
}
