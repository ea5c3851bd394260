package websock

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
)

// TestResetsAreRateLimited (issue 9 item 11a): resets are limited per
// instance (5, then one every 2 s) and per token (10, then one a second),
// across control messages and POST alike; a refused one gets an error
// event or 429 with Retry-After, saying how long to wait, and changes
// nothing. The clock stands still, so nothing refills during the test.
func TestResetsAreRateLimited(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1", "web2", "web3"), nil, nil)
	now := time.Now()
	e.srv.resets.now = func() time.Time { return now }

	a, first := e.attach(termPath)
	for i := 0; i < resetInstanceBurst; i++ {
		a.control(`{"type":"reset"}`)
		a.event("reset")
	}
	before := sessionOf(e, "web1")
	a.control(`{"type":"reset"}`)
	if ev := a.event("error"); !strings.Contains(ev.Message, `too many resets of instance "web1": wait 2 s`) {
		t.Errorf("the 6th control reset: %q, want too many resets of web1, wait 2 s", ev.Message)
	}
	// POST shares the instance's limit, for another token too.
	resp := e.do("POST", "/api/instances/web1/terminal/reset", bearerHeader(tokWeb), nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("POST reset of web1 after 5: %s (Retry-After %q), want 429 with Retry-After 2", respText(resp), resp.Header.Get("Retry-After"))
	}
	if cur := sessionOf(e, "web1"); cur != before || cur == first.Session {
		t.Errorf("web1's session %s -> %s: a refused reset changed it", before, cur)
	}

	// The token's own limit: 5 more on web2 use it up; web3 is then
	// refused although its instance's bucket is full.
	for i := 0; i < resetIdentityBurst-resetInstanceBurst; i++ {
		if resp := e.do("POST", "/api/instances/web2/terminal/reset", bearerHeader(tokAll), nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("POST reset %d of web2: %s", i+1, respText(resp))
		}
	}
	resp = e.do("POST", "/api/instances/web3/terminal/reset", bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("POST reset of web3 by a token that reset 10 times: %s, want 429", respText(resp))
	}
	if msg := errorMessage(t, resp.Body); !strings.Contains(msg, "too many resets by this token: wait 1 s") {
		t.Errorf("429 message %q, want too many resets by this token, wait 1 s", msg)
	}
	// Another token may still reset web3.
	if resp := e.do("POST", "/api/instances/web3/terminal/reset", bearerHeader(tokWeb), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("POST reset of web3 by another token: %s", respText(resp))
	}

	// Time passes: the instance may be reset again.
	now = now.Add(2 * time.Second)
	a.control(`{"type":"reset"}`)
	a.event("reset")
}

// TestResetsDoNotQueueAfterTheClientLeaves (issue 9 item 11a): a client
// that sends a flood of reset control messages and leaves is detached at
// once, and no reset runs after it left: one reset runs at a time per
// connection and the others are refused while it does, instead of queueing
// behind it. The rate limits are off here, to show this on its own.
func TestResetsDoNotQueueAfterTheClientLeaves(t *testing.T) {
	var buf termtest.SyncBuffer
	e := newEnv(t, localBackend(), nil, func(c *Config) { c.UnlimitedResets = true; c.Audit = audit.New(&buf) })
	w, _ := e.attach(termPath)
	for i := 0; i < 100; i++ {
		w.send(websocket.TextMessage, []byte(`{"type":"reset"}`))
	}
	_ = w.c.NetConn().Close()
	e.waitClients("web1", 0)
	count := func() int {
		n := 0
		for _, l := range auditLines(t, &buf) {
			if l["event"] == audit.Reset {
				n++
			}
		}
		return n
	}
	// The connection's teardown waits for a reset it had running: once
	// its detach is audited, every reset it started has been.
	waitAudit(t, &buf, audit.Detach)
	done := count()
	time.Sleep(500 * time.Millisecond)
	t.Logf("100 reset messages, then gone: %d resets ran, none after the client left", done)
	if n := count(); n != done || done > 3 {
		t.Errorf("%d resets ran while the client was there, %d after it left; want a few, then none", done, n-done)
	}
}
