package sessions

import (
	"testing"
	"time"
)

// A watcher of who is attached is woken when a client attaches, leaves or
// the session ends, and sees the new list.
func TestAttachedChanges(t *testing.T) {
	r, _ := newTestRegistry(t, Config{})
	a := attach(t, r, "web1", AttachOptions{Who: "alice", Via: "ssh"})
	list, changed := a.AttachedChanges()
	if len(list) != 1 || list[0].Who != "alice" {
		t.Fatalf("list %+v", list)
	}
	woken := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("not woken when %s", what)
		}
	}
	select {
	case <-changed:
		t.Fatal("woken without a change")
	default:
	}
	b := attach(t, r, "web1", AttachOptions{Who: "auditor", Via: "websocket", ReadOnly: true})
	woken("a client attached", changed)
	list, changed = a.AttachedChanges()
	if len(list) != 2 || list[1].Who != "auditor" || !list[1].ReadOnly {
		t.Fatalf("after the attach: %+v", list)
	}
	b.Detach()
	woken("a client left", changed)
	list, changed = a.AttachedChanges()
	if len(list) != 1 || list[0].Who != "alice" {
		t.Fatalf("after the detach: %+v", list)
	}
	if _, err := r.Reset(t.Context(), "web1", "test"); err != nil {
		t.Fatal(err)
	}
	woken("the session ended", changed)
}
