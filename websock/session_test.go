package websock

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

func TestResizeControl(t *testing.T) {
	be := newFakeBackend("rs")
	e := newEnv(t, be, nil, nil)
	a, _ := e.attach("/api/instances/rs/terminal" + query("cols", "90", "rows", "20"))
	p := be.proc("rs")
	if got := p.currentSize(); got != (sessions.Size{Cols: 90, Rows: 20}) {
		t.Fatalf("started with %+v, want 90x20", got)
	}
	a.control(`{"type":"resize","cols":100000,"rows":100000}`)
	a.event("error")
	a.control(`{"type":"resize","cols":120,"rows":40}`)
	// The session applies sizes asynchronously: wait, bounded, for it.
	want := sessions.Size{Cols: 120, Rows: 40}
	deadline := time.Now().Add(waitFor)
	for p.currentSize() != want {
		if time.Now().After(deadline) {
			t.Fatalf("size %+v, want %+v", p.currentSize(), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// The valid resize got no error event; the echo proves the order.
	a.input("ping\n")
	a.output(0, regexpQuote("ping\n"))
	for _, ev := range a.events {
		if ev.Type == "error" && ev.Message != "window size 100000x100000 is out of range: columns and rows must be 1..1000" {
			t.Errorf("unexpected error event %q", ev.Message)
		}
	}
}

func TestSessionEndCauses(t *testing.T) {
	be := newFakeBackend("ex", "gone", "down")
	e := newEnv(t, be, nil, nil)

	a, _ := e.attach("/api/instances/ex/terminal")
	be.proc("ex").exit(5)
	if ev := a.event("exit"); ev.Code != 5 {
		t.Errorf("exit event %+v, want code 5", ev)
	}
	if code := a.closeCode(); code != websocket.CloseNormalClosure {
		t.Errorf("close %d after exit, want 1000", code)
	}

	b, _ := e.attach("/api/instances/gone/terminal")
	be.stop(t, "gone")
	if ev := b.event("error"); ev.Message != sessions.ErrInstanceGone.Error() {
		t.Errorf("instance stopped: %+v", ev)
	}
	if code := b.closeCode(); code != websocket.CloseNormalClosure {
		t.Errorf("close %d after the instance stopped, want 1000", code)
	}

	c, _ := e.attach("/api/instances/down/terminal")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		done <- e.reg.Shutdown(ctx)
	}()
	if ev := c.event("error"); ev.Message != sessions.ErrShutdown.Error() {
		t.Errorf("registry shutdown: %+v", ev)
	}
	if code := c.closeCode(); code != websocket.CloseGoingAway {
		t.Errorf("close %d after the registry shut down, want 1001", code)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
