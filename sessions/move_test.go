package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// readUntilReset reads c up to its in-band reset event.
func readUntilReset(t *testing.T, c *Client) *ResetError {
	t.Helper()
	_, re := readEvent[*ResetError](t, c)
	return re
}

// Keys typed while a reset is under way (the old shell being killed, the
// fresh one starting) go to the fresh shell instead of being dropped.
func TestKeysTypedDuringResetReachTheNewShell(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	c := attach(t, r, "web1", AttachOptions{})
	old := fb.last()
	old.killFails.Store(1) // the kill is retried: the reset takes a while
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reset := make(chan error, 1)
	go func() {
		_, err := r.Reset(ctx, "web1", "alice")
		reset <- err
	}()
	waitFor(t, func() bool { return old.kills.Load() >= 1 }) // the old session is closing
	if n, err := c.Write([]byte("ls\r")); n != 3 || err != nil {
		t.Fatalf("Write during the reset: %d, %v; want the keys taken", n, err)
	}
	if err := <-reset; err != nil {
		t.Fatal(err)
	}
	fresh := fb.last()
	if fresh == old || fresh.inputString() != "ls\r" || strings.Contains(old.inputString(), "ls") {
		t.Fatalf("fresh shell got %q, old shell %q; want the keys in the fresh shell", fresh.inputString(), old.inputString())
	}
	if re := readUntilReset(t, c); re.By != "alice" || re.Attach.Session != c.Info().Session {
		t.Fatalf("reset event %+v, client info %+v", re, c.Info())
	}
	c.Detach()
}

// A reset moves every attached client, with its options: an observer stays
// read-only, and who/via stay as they were. Each gets the reset once, in
// band, then the fresh session's output.
func TestResetKeepsClientsOptions(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	rw := attach(t, r, "web1", AttachOptions{Who: "alice", Via: "ssh", Remote: "10.0.0.1:1"})
	ro := attach(t, r, "web1", AttachOptions{Who: "bob", Via: "websocket", Remote: "10.0.0.2:2", ReadOnly: true})
	old := fb.last()
	old.emit("before\r\n")
	s, err := r.Reset(context.Background(), "web1", "carol")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Client{rw, ro} {
		re := readUntilReset(t, c)
		if re.NewSession != s.ID() || re.Attach.Session != s.ID() || re.By != "carol" || c.Info().Session != s.ID() {
			t.Fatalf("reset event %+v, info %+v; want session %s", re, c.Info(), s.ID())
		}
	}
	fresh := fb.last()
	fresh.emit("after\r\n")
	for _, c := range []*Client{rw, ro} {
		if b, err := readAtLeast(t, c, len("after\r\n")); err != nil || string(b) != "after\r\n" {
			t.Fatalf("after the reset got %q, %v; want the fresh shell's output only", b, err)
		}
	}
	if _, err := ro.Write([]byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("observer's input after the reset: %v, want ErrReadOnly", err)
	}
	if _, err := rw.Write([]byte("y")); err != nil || fresh.inputString() != "y" {
		t.Fatalf("input after the reset: %v, fresh shell got %q", err, fresh.inputString())
	}
	info := s.Info()
	if len(info.Attached) != 2 {
		t.Fatalf("attached %+v, want both clients", info.Attached)
	}
	for _, a := range info.Attached {
		want := Attached{Who: "alice", Via: "ssh", Remote: "10.0.0.1:1"}
		if a.ReadOnly {
			want = Attached{Who: "bob", Via: "websocket", Remote: "10.0.0.2:2", ReadOnly: true}
		}
		if a.Who != want.Who || a.Via != want.Via || a.Remote != want.Remote {
			t.Fatalf("attached %+v, want %+v", a, want)
		}
	}
	rw.Detach()
	ro.Detach()
}

// A reset never carries a revoked client along: it gets a RevokedError and
// only the allowed client is moved.
func TestResetDoesNotCarryRevokedClient(t *testing.T) {
	r, _ := newTestRegistry(t, Config{})
	creds := &allowList{why: "token removed"}
	creds.set("web1")
	c := attach(t, r, "web1", AttachOptions{Allowed: creds.check})
	kept := &allowList{}
	kept.set("web1")
	stays := attach(t, r, "web1", AttachOptions{Allowed: kept.check})
	creds.set()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := r.Reset(ctx, "web1", "admin")
	if err != nil {
		t.Fatal(err)
	}
	var re *RevokedError
	if _, err := readErr(t, c); !errors.As(err, &re) || !strings.Contains(err.Error(), "token removed") {
		t.Fatalf("revoked client: %v, want a RevokedError", err)
	}
	readUntilReset(t, stays)
	// Info is the lock-free snapshot, published in the critical section
	// that also woke the moved client: wait for it, as a listing would.
	for deadline := time.Now().Add(5 * time.Second); s.Info().Clients != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fresh session has %d clients, want only the allowed one", s.Info().Clients)
		}
	}
	if _, err := r.Attach(ctx, "web1", AttachOptions{Allowed: creds.check}); !errors.As(err, &re) {
		t.Fatalf("re-attach with a revoked credential: %v, want a RevokedError", err)
	}
	stays.Detach()
}

// A reset made by another gateway reaches this one as the holder ending
// the stream with a *ResetError: the registry adopts the fresh held
// session and moves its clients into it, and leaves the shell alone.
func TestHeldResetByAnotherGatewayMovesClients(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "4e1d", 0, "")
	r := newHeldRegistry(t, Config{}, hb)
	c := attach(t, r, "web1", AttachOptions{Who: "alice"})
	conn := hb.lastConn()
	hb.mu.Lock()
	hb.holders["web1"].session = "f00d" // the other gateway's reset
	hb.mu.Unlock()
	hb.end("web1", &ResetError{OldSession: "4e1d", NewSession: "f00d", By: "carol"})
	if re := readUntilReset(t, c); re.NewSession != "f00d" || re.By != "carol" || c.Info().Session != "f00d" {
		t.Fatalf("reset event %+v, info %+v; want f00d", re, c.Info())
	}
	if conn.killCalled.Load() || !conn.released.Load() {
		t.Fatalf("old connection killed %v, released %v; want released only", conn.killCalled.Load(), conn.released.Load())
	}
	// Info is a snapshot the session publishes once its move is done,
	// which the moved client may see first.
	var s []Info
	listed := func() bool {
		s = r.Sessions()
		return len(s) == 1 && s[0].Session == "f00d" && s[0].Clients == 1 && s[0].Durable
	}
	for deadline := time.Now().Add(5 * time.Second); !listed(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sessions %+v, want f00d with the moved client", s)
		}
	}
	if _, err := c.Write([]byte("pwd\r")); err != nil || hb.lastConn() == conn || hb.lastConn().inputString() != "pwd\r" {
		t.Fatalf("input after the move: %v, new connection got %q", err, hb.lastConn().inputString())
	}
	c.Detach()
}
