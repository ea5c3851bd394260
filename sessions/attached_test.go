package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestObserverCannotTypeOrResize(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	typist := attach(t, r, "web1", AttachOptions{Who: "alice", Via: "ssh", Remote: "10.0.0.1:5000", Size: Size{Cols: 100, Rows: 30}})
	observer := attach(t, r, "web1", AttachOptions{Who: "auditor", Via: "websocket", Remote: "10.0.0.2:6000", ReadOnly: true, Size: Size{Cols: 40, Rows: 10}})
	p := fb.last()
	if _, err := observer.Write([]byte("rm -rf /\n")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("observer's input: %v, want ErrReadOnly", err)
	}
	if err := observer.Resize(Size{Cols: 20, Rows: 5}); err != nil {
		t.Fatalf("observer's resize: %v, want it ignored without an error", err)
	}
	if err := observer.Resize(Size{Cols: 0, Rows: 5}); !errors.Is(err, ErrBadSize) {
		t.Fatalf("observer's invalid resize: %v, want ErrBadSize", err)
	}
	if _, err := typist.Write([]byte("ls\n")); err != nil {
		t.Fatal(err)
	}
	if got := p.inputString(); got != "ls\n" {
		t.Fatalf("the shell got %q, want only the typist's input", got)
	}
	if got := r.Sessions()[0]; got.Clients != 2 {
		t.Fatalf("%d clients", got.Clients)
	}
	// The observer's sizes (at attach and later) never reached the shell.
	waitFor(t, func() bool { return r.Sessions()[0].Clients == 2 })
	p.mu.Lock()
	sizes := append([]Size(nil), p.sizes...)
	p.mu.Unlock()
	for _, s := range sizes {
		if s.Cols == 40 || s.Cols == 20 {
			t.Fatalf("the shell was resized to an observer's size: %v", sizes)
		}
	}
	// The observer gets the output like anyone else.
	p.emit("hello\n")
	if b, err := readAtLeast(t, observer, len("hello\n")); err != nil || !strings.Contains(string(b), "hello") {
		t.Fatalf("observer got %q, %v", b, err)
	}
}

func TestInfoListsWhoIsAttached(t *testing.T) {
	r, _ := newTestRegistry(t, Config{})
	in := r.Sessions
	a := attach(t, r, "web1", AttachOptions{Who: "alice", Via: "ssh", Remote: "10.0.0.1:5000"})
	attach(t, r, "web1", AttachOptions{Who: "auditor", Via: "websocket", Remote: "10.0.0.2:6000", ReadOnly: true})
	got := in()[0].Attached
	if len(got) != 2 || got[0].Who != "alice" || got[0].Via != "ssh" || got[0].ReadOnly ||
		got[1].Who != "auditor" || got[1].Via != "websocket" || !got[1].ReadOnly || got[1].Remote != "10.0.0.2:6000" || got[0].Since.IsZero() {
		t.Fatalf("attached = %+v", got)
	}
	a.Detach()
	waitFor(t, func() bool { return len(in()[0].Attached) == 1 })
	b, _ := json.Marshal(in()[0])
	if !strings.Contains(string(b), `"attached":[{"who":"auditor","via":"websocket","remote":"10.0.0.2:6000","since":`) || !strings.Contains(string(b), `"read_only":true}]`) {
		t.Fatalf("JSON: %s", b)
	}
	r2, _ := newTestRegistry(t, Config{})
	c := attach(t, r2, "db1", AttachOptions{})
	c.Detach()
	waitFor(t, func() bool { return r2.Sessions()[0].Clients == 0 })
	if b, _ := json.Marshal(r2.Sessions()[0]); !strings.Contains(string(b), `"attached":[]`) {
		t.Fatalf("no client: %s, want an empty attached array", b)
	}
}

// An observer watches a session and never starts one (issue 39 item 4):
// with none it is refused with ErrNothingToWatch and nothing is started;
// once a writer started one, it watches it without sizing it.
func TestObserverDoesNotStartASession(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	if _, err := r.Attach(context.Background(), "web1", AttachOptions{ReadOnly: true}); !errors.Is(err, ErrNothingToWatch) || !errors.Is(err, ErrNoSession) {
		t.Fatalf("an observer's attach with no session: %v, want ErrNothingToWatch", err)
	}
	fb.mu.Lock()
	started := len(fb.procs)
	fb.mu.Unlock()
	if n := len(r.Sessions()); n != 0 || started != 0 {
		t.Fatalf("an observer's refused attach left %d sessions and started %d shells", n, started)
	}
	attach(t, r, "web1", AttachOptions{Size: Size{Cols: 100, Rows: 30}})
	attach(t, r, "web1", AttachOptions{ReadOnly: true, Size: Size{Cols: 40, Rows: 10}})
	if got := r.Sessions()[0].Size; got != "100x30" {
		t.Fatalf("the session's size is %v after an observer attached, want the writer's", got)
	}
}
