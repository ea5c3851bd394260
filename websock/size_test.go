package websock

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestSizeFollowsTheLatestAndFallsBack: two pages; the size follows the
// one that attached or typed last, the other is told with a size event,
// and when the latest leaves the shell goes back to the other's size
// (contract, session semantics 4). A page's own resize is never echoed.
func TestSizeFollowsTheLatestAndFallsBack(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, ev := e.attach("/api/instances/web1/terminal?cols=100&rows=30")
	if ev.Cols != 100 || ev.Rows != 30 {
		t.Fatalf("attached at %dx%d, want 100x30", ev.Cols, ev.Rows)
	}
	b, ev := e.attach("/api/instances/web1/terminal?cols=148&rows=41")
	if ev.Cols != 148 || ev.Rows != 41 {
		t.Fatalf("second attached at %dx%d, want its own 148x41", ev.Cols, ev.Rows)
	}
	if s := a.event("size"); s.Cols != 148 || s.Rows != 41 || s.Pinned {
		t.Fatalf("a told %+v, want 148x41", s)
	}
	b.control(`{"type":"resize","cols":150,"rows":42}`)
	if s := a.event("size"); s.Cols != 150 || s.Rows != 42 {
		t.Fatalf("a told %+v, want 150x42", s)
	}
	mark := b.out.Len()
	b.input("echo size=$(stty size).\r")
	b.output(mark, regexp.MustCompile(`size=42 150\.`))
	b.hangUp()
	if s := a.event("size"); s.Cols != 100 || s.Rows != 30 {
		t.Fatalf("after the latest left, a told %+v, want 100x30", s)
	}
	mark = a.out.Len()
	a.input("echo size=$(stty size).\r")
	a.output(mark, regexp.MustCompile(`size=30 100\.`))
	for _, ev := range b.events {
		if ev.Type == "size" && ev.Cols == 150 {
			t.Errorf("b's own resize was echoed to it: %+v", b.events)
		}
	}
}

// TestPinSizeControl: the page's pin control; an observer may not pin.
func TestPinSizeControl(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	a, _ := e.attach("/api/instances/web1/terminal?cols=100&rows=30")
	a.control(`{"type":"pin-size","cols":120,"rows":40}`)
	if s := a.event("size"); s.Cols != 120 || s.Rows != 40 || !s.Pinned {
		t.Fatalf("pin told %+v, want 120x40 pinned", s)
	}
	a.control(`{"type":"resize","cols":90,"rows":20}`)
	if s := a.event("size"); s.Cols != 120 || !s.Pinned {
		t.Fatalf("a resize under a pin told %+v, want 120x40 pinned", s)
	}
	o, _, err := e.dial("/api/instances/web1/terminal?cols=80&rows=24", bearerHeader(tokRO))
	if err != nil {
		t.Fatal(err)
	}
	o.event("attached")
	o.control(`{"type":"pin-size","auto":true}`)
	if m := o.event("error").Message; !strings.HasPrefix(m, "size refused: this token is read-only on web1") {
		t.Fatalf("observer's pin: %q", m)
	}
	a.control(`{"type":"pin-size","cols":0,"rows":5}`)
	if m := a.event("error").Message; !regexp.MustCompile(`out of range`).MatchString(m) {
		t.Fatalf("bad pin: %q", m)
	}
	a.control(`{"type":"pin-size","auto":true}`)
	if s := a.event("size"); s.Cols != 90 || s.Rows != 20 || s.Pinned {
		t.Fatalf("auto told %+v, want a's 90x20 unpinned", s)
	}
	resp := e.do(http.MethodGet, "/api/sessions", bearerHeader(tokAll), nil)
	if body := respText(resp); !regexp.MustCompile(`"size":"90x20","size_pinned":false`).MatchString(body) {
		t.Fatalf("/api/sessions: %s", body)
	}
}
