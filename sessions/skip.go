package sessions

import (
	"errors"
	"fmt"
	"time"
)

// Catching up (contract, session semantics 8): with a Replayer that
// redraws the terminal's whole state (a Redrawer: --replay screen), a
// client whose queue would overflow is brought forward instead of being
// dropped. In the pump's critical section (Session.mu), the output it has
// not taken yet is discarded and its queue becomes: the in-band events it
// had not taken (resets, notices), a *SkippedError, the current screen
// (what a fresh attach gets) and then the live output from
// SkippedError.Offset on. So no byte reaches it twice and the only gap is
// the reported one. The snapshot counts against the queue: one that does
// not fit drops the client with ErrSlowClient, as does --replay raw.
//
// Cost: one snapshot per delivered chunk at most, shared by every client
// that overflows on it (the chunks are shared, never modified). A client
// that keeps not reading is brought forward again only when its queue
// overflows again, and one that took nothing for Config.StuckTimeout
// since it was last brought forward is dropped at its next overflow: a
// client that skips forever is still cut, the listeners' write timeouts
// aside.

// SkippedError is returned in band by Take when the client fell too far
// behind and was brought forward: Bytes output bytes were never sent to
// it; the next Take returns Replay bytes of redraw (the current screen),
// then the live output from Offset on. It is not final: the client stays
// attached.
type SkippedError struct {
	// Offset is the number of the first output byte after the redraw.
	Offset int64
	// Bytes is how many output bytes the client never got.
	Bytes int64
	// Replay is the length of the redraw that follows the event.
	Replay int
}

func (e *SkippedError) Error() string {
	return "fell behind the output: skipped " + SizeString(e.Bytes) + " to catch up; this is the current screen"
}

// SizeString writes a byte count for people: 512 B, 14 KB, 3.2 MB.
func SizeString(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%d KB", (n+500)/1000)
	case n < 10*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	default:
		return fmt.Sprintf("%d MB", (n+500000)/1000000)
	}
}

// Redrawer is implemented by a Replayer whose Replay redraws the whole
// terminal state from any state the client's terminal is in (package
// screen): only then may a lagging client be brought forward with it.
type Redrawer interface {
	Redraws() bool
}

// skipState is a client's catching-up bookkeeping (guarded by Client.mu).
type skipState struct {
	// headReplay: the first queued chunk is the attach's replay, not
	// output (it is not counted in SkippedError.Bytes).
	headReplay bool
	skipped    bool      // the client was brought forward at least once
	at         time.Time // when, last
	took       bool      // Take returned something since then
}

// tookLocked records that Take returned something. Called with
// Client.mu held and the queue not empty.
func (k *skipState) tookLocked() {
	k.took, k.headReplay = true, false
}

// cancelSequence (CAN) ends any escape, control or string sequence the
// client's terminal may be in the middle of (its last chunk may have
// stopped there), so the redraw is read from the ground state.
const cancelSequence = 0x18

// forward is the bringing forward for one delivered chunk: the redraw is
// taken once, by the first client that overflows on it, and shared.
type forward struct {
	redraw []byte // CAN, then the snapshot; nil until taken
	offset int64  // the output offset after it
}

// overflowLocked handles a client whose queue chunk would overflow:
// brought forward, or dropped. Called with s.mu held.
func (s *Session) overflowLocked(c *Client, chunk []byte, f *forward) enqueueResult {
	if rd, ok := s.replay.(Redrawer); !ok || !rd.Redraws() {
		return c.dropSlow()
	}
	if f.redraw == nil {
		start := time.Now()
		snap := s.replay.Replay()
		f.redraw = make([]byte, 0, 1+len(snap))
		f.redraw = append(append(f.redraw, cancelSequence), snap...)
		f.offset = s.ring.End()
		s.log.Debug("snapshot to bring clients forward", "bytes", len(snap), "took", time.Since(start))
	}
	return c.bringForward(f.redraw, f.offset, int64(len(chunk)), s.clock.Now(), s.cfg.StuckTimeout)
}

// bringForward replaces what the client has not taken by the in-band
// events among it, a *SkippedError and redraw; lost is the overflowing
// chunk's length (it is in the redraw, not queued). Called with
// Session.mu held.
func (c *Client) bringForward(redraw []byte, offset, lost int64, now time.Time, stuck time.Duration) enqueueResult {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return alreadyClosed
	}
	k := c.skip
	if len(redraw) > c.limit || (k.skipped && !k.took && now.Sub(k.at) >= stuck) {
		c.mu.Unlock()
		return c.dropSlow()
	}
	var (
		queue  [][]byte
		events []error
		next   int
		// isReplay: the chunk at hand is a replay or a redraw, not output.
		isReplay = k.headReplay
	)
	for _, ch := range c.queue {
		if len(ch) > 0 {
			if !isReplay {
				lost += int64(len(ch))
			}
			isReplay = false
			continue
		}
		ev := c.resets[next]
		next++
		var skipped *SkippedError
		var reset *ResetError
		switch {
		case errors.As(ev, &skipped): // never taken: it merges into the new one
			lost += skipped.Bytes
			isReplay = skipped.Replay > 0
			continue
		case errors.As(ev, &reset):
			isReplay = reset.Attach.Replay > 0
		default:
			isReplay = false
		}
		queue = append(queue, ch)
		events = append(events, ev)
	}
	// A fresh array: the old one may have held a queue's worth of chunks.
	c.queue = append(queue, []byte{}, redraw)
	c.resets = append(events, &SkippedError{Offset: offset, Bytes: lost, Replay: len(redraw)})
	c.queued = len(redraw)
	c.skip = skipState{skipped: true, at: now}
	c.mu.Unlock()
	c.signal()
	return broughtForward
}
