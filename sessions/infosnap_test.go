package sessions

import (
	"testing"
	"time"
)

// Issue 20 D4: GET /metrics and GET /api/sessions (Registry.Sessions)
// answer while a session is busy under its lock (a resize storm held it
// for 33 s), with its clients and output counted as they are.
func TestSessionsListDoesNotWaitForABusySession(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{Label: "test", Who: "alice", Via: "websocket"})
	fb.last().emit("hello")
	if _, err := readAtLeast(t, c, 5); err != nil {
		t.Fatal(err)
	}
	s, _ := c.session()
	s.mu.Lock() // busy: what a storm of work under the lock looks like to others
	got := make(chan []Info, 1)
	go func() { got <- r.Sessions() }()
	var list []Info
	select {
	case list = <-got:
	case <-time.After(2 * time.Second):
		s.mu.Unlock()
		<-got
		t.Fatal("Sessions waited on a session's lock")
	}
	s.mu.Unlock()
	if len(list) != 1 || list[0].Clients != 1 || list[0].BytesOut != 5 || len(list[0].Attached) != 1 || list[0].Attached[0].Who != "alice" {
		t.Fatalf("Sessions while the session is busy: %+v, want web1 with 1 client (alice) and 5 bytes out", list)
	}
	c.Detach()
	deadline := time.Now().Add(5 * time.Second)
	for r.Sessions()[0].Clients != 0 || r.Sessions()[0].IdleSince == nil {
		if time.Now().After(deadline) {
			t.Fatalf("after the detach: %+v, want no client and an idle time", r.Sessions())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
