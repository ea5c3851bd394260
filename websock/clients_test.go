package websock

import (
	"fmt"
	"testing"
	"time"
)

// clientsNow reads clients events until one lists exactly want ("who:ro"
// entries, in order).
func (w *wsClient) clientsNow(want ...string) {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	var last []string
	for {
		ev := w.event("clients")
		last = last[:0]
		for _, a := range ev.Attached {
			last = append(last, fmt.Sprintf("%s:%v", a.Who, a.ReadOnly))
		}
		if fmt.Sprint(last) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("clients event lists %v, want %v", last, want)
		}
	}
}

// TestClientsEventsFollowWhoIsAttached is issue 12 item 2 live: a
// connection that asks with ?clients=1 gets a clients event after it
// attaches and whenever someone attaches or leaves, also after a reset
// moved it; one that does not ask gets none.
func TestClientsEventsFollowWhoIsAttached(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	a, _ := e.attach(termPath + query("clients", "1"))
	a.clientsNow("alice:false")

	b, resp, err := e.dial(termPath, bearerHeader(tokRO))
	if err != nil {
		t.Fatalf("observer: %v (%s)", err, respText(resp))
	}
	b.event("attached")
	a.clientsNow("alice:false", "auditor:true")
	b.hangUp()
	a.clientsNow("alice:false")
	for _, ev := range b.events {
		if ev.Type == "clients" {
			t.Fatal("a connection that did not ask got a clients event")
		}
	}

	a.control(`{"type":"reset"}`)
	a.event("reset")
	a.clientsNow("alice:false") // the new session's list
	c, _ := e.attach(termPath)
	a.clientsNow("alice:false", "alice:false")
	c.hangUp()
	a.clientsNow("alice:false")
}
