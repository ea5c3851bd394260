package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/termgate/termgate/internal/ring"
)

// hugeReplayer replays n bytes, whatever the output (as a screen snapshot
// of a huge window full of combining marks could).
type hugeReplayer struct{ n int }

func (hugeReplayer) Write([]byte)     {}
func (hugeReplayer) Resize(Size)      {}
func (hugeReplayer) Attached(int)     {}
func (hugeReplayer) Close()           {}
func (r hugeReplayer) Replay() []byte { return make([]byte, r.n) }

// An attach whose replay is larger than a client's queue is refused and
// not counted (red team round 3, M1: such clients were dropped at once but
// stayed in the session's list, which was then never reaped): the session
// stays idle and is reaped after its idle timeout.
func TestAttachWhoseReplayDoesNotFitIsNotCounted(t *testing.T) {
	clock := clockwork.NewFakeClock()
	ended := make(chan error, 1)
	r, _ := newTestRegistry(t, Config{
		BufferSize: 64 << 10, ClientQueue: 1 << 20, IdleTimeout: time.Minute, Clock: clock,
		NewReplayer: func(*ring.Buffer, func([]byte)) Replayer { return hugeReplayer{n: 1<<20 + 1} },
		OnEnd:       func(_ Info, cause error) { ended <- cause },
	})
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := r.Attach(ctx, "web1", AttachOptions{Label: "big"})
		cancel()
		var tooLarge *ReplayTooLargeError
		if !errors.As(err, &tooLarge) || tooLarge.Replay != 1<<20+1 || tooLarge.Queue != 1<<20 {
			if c != nil {
				c.Detach()
			}
			t.Fatalf("attach: %v, want a ReplayTooLargeError", err)
		}
	}
	s := r.Sessions()
	if len(s) != 1 || s[0].Clients != 0 || len(s[0].Attached) != 0 || s[0].IdleSince == nil {
		t.Fatalf("sessions %+v, want one idle session with no client", s)
	}
	clock.Advance(time.Minute)
	select {
	case cause := <-ended:
		if !errors.Is(cause, ErrIdle) {
			t.Fatalf("session ended with %v, want ErrIdle", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the session was not reaped")
	}
}
