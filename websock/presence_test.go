package websock

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRaiseHandAndGrantOverWebSocket: an observer's raised hand (sent a
// hundred times) reaches the writer once; the writer's grant lets the
// observer type into the shell.
func TestRaiseHandAndGrantOverWebSocket(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	w, _ := e.attach("/api/instances/web1/terminal?cols=80&rows=24")
	o, _, err := e.dial("/api/instances/web1/terminal?cols=80&rows=24", bearerHeader(tokRO))
	if err != nil {
		t.Fatal(err)
	}
	o.event("attached")
	o.input("echo nope\r")
	if m := o.event("error").Message; m != msgReadOnlyInput {
		t.Fatalf("observer's input: %q", m)
	}
	o.control(`{"type":"grant","who":"alice"}`)
	if m := o.event("error").Message; !strings.HasPrefix(m, "grant refused: this token is read-only on web1") {
		t.Fatalf("observer's grant: %q", m)
	}
	for range 100 {
		o.control(`{"type":"raise-hand"}`)
	}
	if h := w.event("hand"); h.Who != "auditor" {
		t.Fatalf("hand event %+v", h)
	}
	w.control(`{"type":"grant","who":"auditor"}`)
	if g := o.event("granted"); g.By != "alice" {
		t.Fatalf("granted event %+v", g)
	}
	mark := w.out.Len()
	o.input("echo granted-$((6*7))\r")
	w.output(mark, regexp.MustCompile(`granted-42`))
	// Only one hand reached the writer.
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		if _, _, err := w.next(deadline); err != nil {
			break
		}
	}
	n := 0
	for _, ev := range w.events {
		if ev.Type == "hand" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d hand events for 100 raises, want 1", n)
	}
}
