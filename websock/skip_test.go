package websock

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/screen"
	"github.com/termgate/termgate/sessions"
)

// screenReplay is the registry config of --replay screen with a small
// client queue (the gateway's is 16 MiB), so that a skip comes soon.
func screenReplay(queue int) func(*sessions.Config) {
	return func(c *sessions.Config) {
		c.NewReplayer = screen.NewReplayerFunc(screen.Options{})
		c.ClientQueue = queue
	}
}

// waitOutput polls until the instance's session has produced n bytes.
func (e *env) waitOutput(instance string, n int64) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, in := range e.reg.Sessions() {
			if in.Instance == instance && in.BytesOut >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("instance %s did not produce %d bytes", instance, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Contract, session semantics 8: a WebSocket client that stops reading
// while 12 MB are printed (six times its queue), then reads again, gets a
// skipped event whose offset and byte count add up to what it had
// received, then the current screen (with the end of the output on it),
// and stays attached: its input reaches the shell, and it resumes exactly
// (gap false) from the offsets the event gave. The write timeout (1 s
// here) does not drop it: a write it does not take waits up to the
// liveness timeout (issue 34 item 3).
func TestWebSocketClientThatFellBehindIsBroughtForward(t *testing.T) {
	// 12 MB, not 30: the screen emulator under -race on a loaded host
	// took long enough for 30 MB that the client was dropped for staying
	// behind (the registry's StuckTimeout, then 30 s).
	const total = 12_000_000
	e := newEnv(t, localBackend(), screenReplay(2<<20), func(c *Config) { c.WriteTimeout = time.Second })
	slow := e.dialSmall(termPath)
	att := slow.event("attached")
	slow.input(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo EN''D$((6*7))\n", total))
	e.waitOutput("web1", total) // it reads nothing meanwhile
	// The stall goes on past the write timeout: a client whose write is
	// blocked for it was dropped (1013) before.
	time.Sleep(3 * time.Second)
	if n := clientsOf(e, "web1"); n != 1 {
		t.Fatalf("%d clients attached after 12 MB and a 3 s stall (write timeout 1 s), want the slow one still", n)
	}

	var sk event
	before := 0
	for sk.Type != "skipped" {
		typ, _, err := slow.next(time.Now().Add(waitFor))
		if err != nil {
			t.Fatalf("no skipped event: %v (events %+v)", err, slow.events)
		}
		if typ == websocket.TextMessage {
			sk = slow.events[len(slow.events)-1]
			if sk.Type == "error" {
				t.Fatalf("error event %q, want skipped", sk.Message)
			}
		} else {
			before = slow.out.Len()
		}
	}
	got := att.Offset - int64(att.Replay) + int64(before)
	if sk.Offset-sk.Bytes != got || sk.Bytes < total/2 || sk.Replay <= 0 {
		t.Fatalf("skipped %+v: offset - bytes = %d, want %d (received before it); most of %d bytes skipped", sk, sk.Offset-sk.Bytes, got, total)
	}
	mark := slow.out.Len()
	slow.atLeast(mark + sk.Replay)
	redraw := slow.out.Bytes()[mark : mark+sk.Replay]
	if redraw[0] != 0x18 {
		t.Fatalf("after the skipped event %q, want CAN then the %d bytes of the redraw", redraw[:min(len(redraw), 40)], sk.Replay)
	}
	// The current screen: what a fresh attach gets now (the shell is
	// back at its prompt: nothing was printed since).
	fresh, fev := e.attach(termPath)
	fresh.atLeast(fev.Replay)
	if fev.Offset == sk.Offset && string(redraw[1:]) != fresh.out.String() {
		t.Fatalf("the redraw differs from a fresh attach's replay at the same offset:\n%q\n%q", redraw[1:], fresh.out.String())
	}
	fresh.hangUp()
	slow.input("echo al''ive\n")
	slow.output(mark, regexp.MustCompile(`alive`))
	var produced int64
	for _, in := range e.reg.Sessions() {
		produced = in.BytesOut
	}
	if after := int64(slow.out.Len() - mark); after > int64(sk.Replay)+produced-sk.Offset {
		t.Fatalf("%d bytes after the skipped event, more than the redraw (%d) and the output from %d to %d", after, sk.Replay, sk.Offset, produced)
	}
	t.Logf("skipped %d bytes; redraw %d bytes", sk.Bytes, sk.Replay)

	// Resume as the page does: since = offset + received - replay.
	since := sk.Offset + int64(slow.out.Len()-mark) - int64(sk.Replay)
	slow.hangUp()
	e.waitClients("web1", 0)
	again, ev := e.attach(fmt.Sprintf("%s?session=%s&since=%d", termPath, att.Session, since))
	if ev.Gap || ev.Offset-int64(ev.Replay) > since {
		t.Fatalf("resume after the skip from %d: %+v, want no gap, from there", since, ev)
	}
	again.input("echo on''ce\n")
	again.output(0, regexp.MustCompile(`once`))
	if strings.Contains(again.out.String(), "alive") {
		t.Fatalf("the resume repeated output: %q", again.out.String())
	}
}

// Abuse: with --replay screen, a client that never reads again (nor
// answers a ping) is still cut once it is silent past the liveness
// timeout (2 s here), however often it is brought forward, and told why
// (1013) if it reads then.
func TestWebSocketClientThatNeverReadsIsStillCut(t *testing.T) {
	var logs termtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e := newEnv(t, localBackend(), screenReplay(1<<20), func(c *Config) {
		c.Logger = log
		c.WriteTimeout = time.Second
		c.PongTimeout, c.PingInterval = 2*time.Second, 500*time.Millisecond
	})
	never := e.dialSmall(termPath)
	never.event("attached")
	// Output that goes on (bounded: the cut ends the test) keeps the
	// client's writes blocked, whatever it was brought forward to.
	never.input("yes | head -c 300000000\n")
	e.waitClients("web1", 0) // cut, although every overflow brought it forward
	if !strings.Contains(logs.String(), "silent past the liveness timeout") {
		t.Fatalf("the log does not say why the client was cut:\n%s", logs.String())
	}
	deadline := time.Now().Add(waitFor)
	told := false
	for {
		typ, data, err := never.next(deadline)
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code == websocket.CloseTryAgainLater && told {
			return
		}
		if typ == websocket.TextMessage && strings.Contains(string(data), "liveness timeout") {
			told = true
		}
		if err != nil && isReset(err) {
			// What the gateway queued for a peer that did not read may
			// be dropped by the kernel (an orphaned socket whose peer
			// kept a zero window): the cut itself is what the contract
			// promises, and the log above says why.
			t.Logf("the connection was reset before the close reached the client (told %v)", told)
			return
		}
		if err != nil {
			t.Fatalf("the connection ended with %v, want close 1013", err)
		}
		never.out.Reset()
	}
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "connection reset by peer")
}
