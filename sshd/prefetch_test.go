package sshd

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// countingBackend counts the lookups of each name.
type countingBackend struct {
	sessions.Backend
	mu      sync.Mutex
	lookups map[string]int
}

func (b *countingBackend) Lookup(ctx context.Context, name string) (sessions.Instance, error) {
	b.mu.Lock()
	b.lookups[name]++
	b.mu.Unlock()
	return b.Backend.Lookup(ctx, name)
}

func (b *countingBackend) count(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lookups[name]
}

// The instance a login names is looked up once, when the client has
// authenticated (so the lookup overlaps the client's channel, PTY and
// shell requests), and the attach uses that answer. A key that may not
// open a terminal on it makes no lookup at all: it learns nothing, and
// costs the engine nothing, before it is refused.
func TestAttachUsesTheLookupStartedAtAuthentication(t *testing.T) {
	var cb *countingBackend
	f := newFixtureReg(t, nil, func(c *sessions.Config) {
		cb = &countingBackend{Backend: c.Backend, lookups: map[string]int{}}
		c.Backend = cb
	})
	c := f.dial(t, "admin", "web1")
	// Authenticated, no channel yet: the lookup is already under way.
	deadline := time.Now().Add(waitFor)
	for cb.count("web1") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no lookup of web1 after authentication")
		}
		time.Sleep(time.Millisecond)
	}
	tm := f.attachOn(t, c, 80, 24)
	tm.send("echo pre''fetched")
	tm.expect("prefetched")
	if n := cb.count("web1"); n != 1 {
		t.Errorf("attach to web1: %d lookups, want the prefetched one alone", n)
	}
	if res := f.run(t, "web", "db1", "list"); res.code != 0 {
		t.Fatalf("list as db1@ with the web* key: %+v", res)
	}
	// As web2@ the no-pty key's list is a command for web2 (refused: this
	// fixture runs none), which looks web2 up once: the command's own
	// lookup, no prefetch beside it.
	if res := f.run(t, "nopty", "web2", "list"); res.code != 1 || !strings.Contains(res.stderr, "cannot run commands") {
		t.Fatalf("list as web2@ with the no-pty key: %+v", res)
	}
	if n, m := cb.count("db1"), cb.count("web2"); n != 0 || m != 1 {
		t.Errorf("keys that may not open a terminal there: lookups of db1 %d (want 0), web2 %d (want 1, the command's)", n, m)
	}
}
