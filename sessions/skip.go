package sessions

import (
	"fmt"
	"time"
)

// Catching up (contract, session semantics 8): with a Replayer that
// redraws the terminal's whole state (a Redrawer: --replay screen), a
// client whose queue would overflow is brought forward instead of being
// dropped, in two steps:
//
//   - falling behind, in the pump (Session.mu held): the output it has not
//     taken is discarded, the in-band events among it (resets, notices)
//     are kept, and from then on its output is counted, not queued. This
//     costs the pump no snapshot and the client no memory, however long
//     it does not read;
//   - catching up, in its reader's Take once the events are taken: the
//     replayer is brought up to date outside the session's lock
//     (Redrawer.Prepare), then, under it, the current screen is taken and
//     the client is subscribed again in one critical section. Its queue
//     becomes a *Skipped, CAN + the screen, then the live output from
//     Skipped.Offset on. No byte reaches it twice; the only gap is
//     the reported one.
//
// So a client is redrawn once per time it falls behind and reads again,
// never for output it does not read. The redraw counts against its queue:
// one that does not fit drops the client with ErrSlowClient, as does
// --replay raw, and so does falling behind for Config.StuckTimeout without
// a Take (a client that never reads is still cut, the listeners' write
// timeouts aside).

// Skipped is returned in band by Take when the client fell too far
// behind and was brought forward: Bytes output bytes were never sent to
// it; the next Take returns Replay bytes of redraw (the current screen),
// then the live output from Offset on. It is not final: the client stays
// attached.
type Skipped struct {
	// Offset is the number of the first output byte after the redraw.
	Offset int64
	// Bytes is how many output bytes the client never got.
	Bytes int64
	// Replay is the length of the redraw that follows the event.
	Replay int
}

func (e *Skipped) String() string {
	return "fell behind the output: skipped " + SizeString(e.Bytes) + " to catch up; this is the current screen"
}

// SizeString writes a byte count for people: 512 B, 14 KB, 3.2 MB.
func SizeString(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 999_500: // rounds to at most 999 KB
		return fmt.Sprintf("%d KB", (n+500)/1000)
	case n < 10*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	default:
		return fmt.Sprintf("%d MB", (n+500000)/1000000)
	}
}

// BroughtForward reports whether the client is brought forward when it
// falls too far behind (its session's Replayer is a Redrawer: --replay
// screen) rather than dropped: a listener then lets a write that the
// client does not take wait up to its liveness timeout, since the client
// is redrawn when it reads again, instead of dropping it after a write
// timeout (contract, session semantics 8).
func (c *Client) BroughtForward() bool {
	s, _ := c.session()
	_, ok := s.replay.(Redrawer) // set once, before any client; a reset keeps the kind
	return ok
}

// Redrawer is implemented by a Replayer whose Replay redraws the whole
// terminal state from any state the client's terminal is in (package
// screen): only then may a lagging client be brought forward with it.
type Redrawer interface {
	// Prepare brings the replayer up to date with the output so far. It
	// is called without the session's lock (and may run beside Write),
	// so that the Replay that follows under the lock has little left to
	// do and the pump waits as little as possible.
	Prepare()
}

// skipState is a client's catching-up bookkeeping (guarded by Client.mu).
type skipState struct {
	// headReplay: the first queued chunk is the attach's replay, not
	// output (it is not counted in Skipped.Bytes).
	headReplay bool
	behind     bool      // fell behind: output is counted, not queued, until Take
	lost       int64     // output bytes it never got
	at         time.Time // when it fell behind
}

// cancelSequence (CAN) ends any escape, control or string sequence the
// client's terminal may be in the middle of (its last chunk may have
// stopped there), so the redraw is read from the ground state.
const cancelSequence = 0x18

// overflowLocked handles a chunk that did not go into c's queue: it
// would overflow it, or c is behind. Called with s.mu held.
func (s *Session) overflowLocked(c *Client, chunk []byte) enqueueResult {
	if _, ok := s.replay.(Redrawer); !ok {
		return c.dropSlow()
	}
	return c.fallBehind(int64(len(chunk)), s.clock.Now(), s.cfg.StuckTimeout)
}

// fallBehind counts n output bytes the client does not get; the first
// time, what it has not taken is discarded, but for its in-band events.
// Called with Session.mu held.
func (c *Client) fallBehind(n int64, now time.Time, stuck time.Duration) enqueueResult {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return alreadyClosed
	}
	if c.skip.behind {
		if now.Sub(c.skip.at) >= stuck {
			c.mu.Unlock()
			return c.dropSlow()
		}
		c.skip.lost += n
		c.mu.Unlock()
		return stillBehind
	}
	lost := n
	var (
		queue  [][]byte
		events []Event
		next   int
		// isReplay: the chunk at hand is a replay or a redraw, not output.
		isReplay = c.skip.headReplay
	)
	for _, ch := range c.queue {
		if len(ch) > 0 {
			if !isReplay {
				lost += int64(len(ch))
			}
			isReplay = false
			continue
		}
		ev := c.events[next]
		next++
		switch ev := ev.(type) {
		case *Skipped: // not taken yet: it merges into the next
			lost += ev.Bytes
			isReplay = ev.Replay > 0
			continue
		case *ResetError:
			isReplay = ev.Attach.Replay > 0
		default:
			isReplay = false
		}
		queue = append(queue, ch)
		events = append(events, ev)
	}
	// Fresh arrays: the old ones may have held a queue's worth of chunks.
	c.queue, c.events, c.queued = queue, events, 0
	c.skip = skipState{behind: true, lost: lost, at: now}
	c.mu.Unlock()
	c.signal() // its reader catches up at its next Take
	return fellBehind
}

// catchUp brings a client that fell behind forward, once the events
// queued before are taken: it queues the *Skipped and the redraw and
// subscribes the client again, under Session.mu. Take calls it first,
// without locks.
func (c *Client) catchUp() {
	c.mu.Lock()
	s, due := c.sess, c.skip.behind && len(c.queue) == 0 && c.cause == nil
	c.mu.Unlock()
	if !due {
		return
	}
	rd, ok := s.replay.(Redrawer) // s.replay is set once, before any client
	if !ok {
		return
	}
	rd.Prepare()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		return // it ends, or a reset moves the client (moveTo)
	}
	start := time.Now()
	snap := s.replay.Replay()
	redraw := make([]byte, 0, 1+len(snap))
	redraw = append(append(redraw, cancelSequence), snap...)
	c.mu.Lock()
	if !c.skip.behind || c.sess != s || c.cause != nil || len(c.queue) > 0 {
		c.mu.Unlock()
		return
	}
	if len(redraw) > c.limit {
		c.mu.Unlock()
		if c.close(ErrSlowClient, true) {
			s.droppedLocked(c)
		}
		return
	}
	ev := &Skipped{Offset: s.ring.End(), Bytes: c.skip.lost, Replay: len(redraw)}
	c.queue = append(c.queue, []byte{}, redraw)
	c.events = append(c.events, ev)
	c.queued = len(redraw)
	c.skip = skipState{}
	c.mu.Unlock()
	s.log.Debug("client brought forward", "client", c.label, "offset", ev.Offset, "skipped", ev.Bytes, "redraw", len(redraw), "took", time.Since(start))
}

// droppedLocked takes a client dropped as too slow off the session.
// Called with s.mu held.
func (s *Session) droppedLocked(c *Client) {
	delete(s.clients, c)
	s.presence.dropped(c)
	s.leftLocked(c) // for the away summary (away.go)
	s.clientsChangedLocked()
	s.replay.Attached(len(s.clients))
	s.applySizePolicyLocked(false) // the fall-back when the size was c's
	s.log.Info("client dropped", "client", c.label, "cause", ErrSlowClient.Error())
	s.startIdleLocked()
}
