package sessions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// allowList is a credential store a test can narrow while clients are
// attached, as a reload of authorized_keys or the token file does.
type allowList struct {
	mu  sync.Mutex
	ok  map[string]bool
	why string
}

func (a *allowList) set(names ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ok = map[string]bool{}
	for _, n := range names {
		a.ok[n] = true
	}
}

func (a *allowList) check(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ok[name] {
		return errors.New(a.why)
	}
	return nil
}

func TestRecheckDisconnectsRevokedClientsOnly(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	revoked := &allowList{why: "key removed from authorized_keys"}
	revoked.set("web1")
	kept := &allowList{}
	kept.set("web1")
	gone := attach(t, r, "web1", AttachOptions{Label: "revoked", Allowed: revoked.check})
	stays := attach(t, r, "web1", AttachOptions{Label: "kept", Allowed: kept.check})

	revoked.set() // the reload removed the credential
	r.Recheck()

	_, err := readErr(t, gone)
	var re *RevokedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "key removed from authorized_keys") {
		t.Fatalf("revoked client's cause = %v, want a RevokedError with the reason", err)
	}
	select {
	case <-gone.Done():
	default:
		t.Fatal("Done not closed for the revoked client")
	}
	if n := r.Sessions()[0].Clients; n != 1 {
		t.Fatalf("session has %d clients after the revocation, want 1 (the other one)", n)
	}
	fb.last().emit("still here\n")
	if b, err := readAtLeast(t, stays, len("still here\n")); err != nil || !strings.Contains(string(b), "still here") {
		t.Fatalf("the client still allowed got %q, %v", b, err)
	}
	// The revoked credential cannot come back in, nor follow a reset.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.Attach(ctx, "web1", AttachOptions{Allowed: revoked.check}); !errors.As(err, &re) {
		t.Fatalf("attach with a revoked credential: %v, want a RevokedError", err)
	}
}

func TestRenameFollowsAndRechecks(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	limited := &allowList{why: "not allowed"}
	limited.set("web2")
	c := attach(t, r, "web2", AttachOptions{Allowed: func(name string) error {
		if !strings.HasPrefix(name, "web") {
			return errors.New("instance " + name + " is outside this key's instances=web*")
		}
		return nil
	}})
	<-fb.watchOn
	fb.events(InstanceEvent{Instance: Instance{Name: "private", ID: "id-web2"}})
	_, err := readErr(t, c)
	var re *RevokedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "private") {
		t.Fatalf("cause %v, want a RevokedError naming the new name", err)
	}
	if got := r.Sessions(); len(got) != 1 || got[0].Instance != "private" {
		t.Fatalf("sessions after the rename: %+v, want one named private", got)
	}
}

func TestWriteToStuckShellTimesOut(t *testing.T) {
	r, fb := newTestRegistry(t, Config{InputTimeout: 100 * time.Millisecond})
	c := attach(t, r, "web1", AttachOptions{})
	fb.last().stuck.Store(true)
	for _, in := range []string{"first", "second"} { // the second waits behind the first
		if _, err := c.Write([]byte(in)); !errors.Is(err, ErrInputStalled) {
			t.Fatalf("write %q to a shell not reading: %v, want ErrInputStalled", in, err)
		}
	}
}

func TestDetachUnblocksWriteToStuckShell(t *testing.T) {
	r, fb := newTestRegistry(t, Config{InputTimeout: time.Hour})
	fb2 := fb
	writer := attach(t, r, "web1", AttachOptions{})
	queued := attach(t, r, "web1", AttachOptions{})
	fb2.last().stuck.Store(true)
	errs := make(chan error, 2)
	go func() { _, err := writer.Write([]byte("in the shell's write")); errs <- err }()
	time.Sleep(20 * time.Millisecond)
	go func() { _, err := queued.Write([]byte("waiting behind it")); errs <- err }()
	time.Sleep(20 * time.Millisecond)
	writer.Detach() // what a listener does when its connection is gone
	queued.Detach()
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrDetached) {
				t.Fatalf("blocked write after Detach: %v, want ErrDetached", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Detach did not unblock a Write to a shell that does not read")
		}
	}
	if n := r.Sessions()[0].Clients; n != 0 {
		t.Fatalf("%d clients still attached, want 0", n)
	}
}
