package sessions

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// AttachInfo describes where an attach landed (the WebSocket "attached"
// event carries it).
type AttachInfo struct {
	Instance string
	Session  string
	// New reports whether this attach created the session.
	New bool
	// Offset is the number of the first output byte after the replay.
	Offset int64
	// Replay is how many bytes of replay Take returns before live output, so
	// a client can resume from Offset + (bytes received - Replay).
	Replay int
	// Gap reports that a resume was asked for but its offset is no longer
	// buffered, so the normal replay was sent instead.
	Gap bool
	// Size is the shell's window size once the client joined (after its
	// own size, if it counts, was applied).
	Size Size
}

// Client is one attached terminal. Take returns the replay, then live
// output (Ready says when there is some), with the in-band events between
// it (Event); once the session is gone under it, Take drains what was
// queued and then returns the cause (*ExitError, *RevokedError, ErrIdle,
// ErrInstanceGone, ErrSlowClient, ErrShutdown, ErrBackendLost). Done is
// closed at the same moment, so a listener can select on it.
//
// A reset does not close the client: the registry moves it to the fresh
// session (see move.go), and Take returns a *ResetError event once,
// between the old session's last output and the new session's replay; the
// client goes on after it. Input written meanwhile waits for the move and
// goes to the new shell.
type Client struct {
	label   string
	since   time.Time
	allowed func(instance string) error // nil: no re-check
	who     Attached
	done    chan struct{} // closed with the first cause

	mu     sync.Mutex // guards the fields below
	sess   *Session   // the session the client is attached to; a reset moves it
	info   AttachInfo // where the client landed (last: after the last reset)
	moved  chan struct{}
	events []Event  // the in-band events, one per empty chunk in queue
	queue  [][]byte // chunks not yet taken; shared, never modified; an empty one marks an event
	queued int      // bytes waiting in queue
	taken  int64    // bytes Take returned, replay included (the detach line's out=)
	limit  int      // queued bytes allowed before the client is dropped
	cause  error    // set once: why the client is closed
	wake   chan struct{}
	after  []func()  // AfterClose callbacks not yet run
	skip   skipState // falling behind and catching up (skip.go)

	// The window size this client asks for (zero: unknown), the size it
	// was last told or asked for, and when it was last active (attached,
	// resized, typed): guarded by the session's mu (see sizepolicy.go); a
	// reset carries them to the fresh session.
	sizeWant, sizeShown Size
	active              uint64

	granted atomic.Bool  // an observer given write access (presence.go)
	lastIn  atomic.Int64 // when input was last written (Unix ns; 0: never)
	handUp  atomic.Bool  // an observer's raised hand (set under presence.mu)
}

func newClient(s *Session, info AttachInfo, opts AttachOptions, limit int) *Client {
	return &Client{
		sess: s, info: info, label: opts.Label, allowed: opts.Allowed, limit: limit,
		wake: make(chan struct{}, 1), done: make(chan struct{}), moved: make(chan struct{}), since: s.clock.Now(),
		who: Attached{Who: opts.Who, Via: opts.Via, Remote: opts.Remote, Since: s.clock.Now(), ReadOnly: opts.ReadOnly},
	}
}

// Done is closed once the client is closed, for whatever cause; queued
// output may still be waiting for Take.
func (c *Client) Done() <-chan struct{} { return c.done }

// Cause returns why the client was closed, or nil while it is attached.
func (c *Client) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// AfterClose arranges for f to run in its own goroutine once the client is
// closed (at once if it is already), like context.AfterFunc: a writer that
// may be blocked in a network write learns of a cut without keeping a
// goroutine per client waiting on Done. The caller waits for f itself.
func (c *Client) AfterClose(f func()) {
	c.mu.Lock()
	if c.cause == nil {
		c.after = append(c.after, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go f()
}

// Taken is how many bytes of output the client has taken, its replay
// included: what its detach line reports.
func (c *Client) Taken() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken
}

// Info returns where the attach landed: after a reset, the fresh session.
func (c *Client) Info() AttachInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// session returns the client's session and a channel closed when a reset
// moves the client away from it.
func (c *Client) session() (*Session, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess, c.moved
}

// SessionDone returns the id of the session the client is in now and a
// channel closed once that session ended (its shell is gone, by exit,
// reset or shutdown): for what lives as long as a session, such as its
// agent socket (sshd/agent.go).
func (c *Client) SessionDone() (string, <-chan struct{}) {
	s, _ := c.session()
	return s.id, s.done
}

// SessionLogin is the instance user the shell of the session the client
// is in now runs as ("" the default user), fixed before the session
// starts: whose its agent socket is (sshd/agent.go).
func (c *Client) SessionLogin() string {
	s, _ := c.session()
	return s.login
}

// Ready receives a value when output was queued or the client was closed
// since the last Take, so a writer can select on it beside its own
// channels and then Take. A value may be stale (Take then returns nothing):
// Ready never loses a wake-up, it may report one twice. One goroutine
// takes a client's output.
func (c *Client) Ready() <-chan struct{} { return c.wake }

// TakeMax bounds what one Take returns (unless a single chunk is larger):
// a writer holds at most this much beside the client's queue, and a client
// that stops reading still fills its queue and is dropped as too slow.
const TakeMax = 256 << 10

// Take appends queued chunks to bufs, in order and up to TakeMax bytes, and
// returns it, without copying and without blocking: the chunks are shared
// with other clients and must not be modified; they stay valid after the
// next Take. When it leaves chunks queued, Ready fires again. Nothing
// queued and not closed: bufs, nil and nil.
//
// An in-band event comes with the chunks before it, and the next Take
// returns what follows it: after a *ResetError the fresh session's replay
// and output, after a *Skipped the current screen (skip.go); see Event for
// the others. A non-nil error is always the end: once the client is closed
// and its queue is drained, Take returns the cause (with the last chunks,
// if any), and again on every later call.
func (c *Client) Take(bufs [][]byte) ([][]byte, Event, error) {
	c.catchUp() // a client that fell behind is brought forward here (skip.go)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return bufs, nil, c.cause
	}
	c.skip.headReplay = false // taken now, if it was there
	n, taken := 0, 0
	for n < len(c.queue) && len(c.queue[n]) > 0 && (n == 0 || taken+len(c.queue[n]) <= TakeMax) {
		taken += len(c.queue[n])
		n++
	}
	bufs = append(bufs, c.queue[:n]...)
	c.queued -= taken
	c.taken += int64(taken)
	var event Event
	if n < len(c.queue) && len(c.queue[n]) == 0 {
		event = c.popEvent()
		n++
		c.signal() // what follows the event (or the cause) is for the next Take
	}
	if n < len(c.queue) {
		// Shift the rest to the front, so the array is reused.
		k := copy(c.queue, c.queue[n:])
		clear(c.queue[k:])
		c.queue = c.queue[:k]
		c.signal()
		return bufs, event, nil
	}
	clear(c.queue) // the chunks are the caller's now: keep no reference
	c.queue = c.queue[:0]
	if cap(c.queue) > 1024 { // a burst of small chunks: do not keep its array
		c.queue = nil
	}
	if event != nil {
		return bufs, event, nil
	}
	return bufs, nil, c.cause
}

// popEvent takes the first in-band event. Called with mu held.
func (c *Client) popEvent() Event {
	ev := c.events[0]
	c.events[0] = nil
	c.events = c.events[1:]
	return ev
}

// Write sends input to the shell. It blocks while the shell takes the
// input, but returns early with the client's cause once the client is
// closed (a Detach from another goroutine unblocks it), and with
// ErrInputStalled when the shell took nothing for Config.InputTimeout; the
// bytes not written by then are dropped. Input written while a reset moves
// the client waits for the move (up to InputTimeout) and goes to the fresh
// shell.
func (c *Client) Write(p []byte) (int, error) {
	if c.ReadOnly() {
		return 0, ErrReadOnly
	}
	if s, _ := c.session(); len(p) > 0 {
		c.lastIn.Store(s.clock.Now().UnixNano())
	}
	written := 0
	for {
		s, moved := c.session()
		n, err := s.input(c, p[written:])
		written += n
		if !errors.Is(err, errSessionClosing) || written == len(p) {
			return written, err
		}
		if err := c.awaitMove(s, moved); err != nil {
			return written, err
		}
	}
}

// awaitMove waits, after s began closing under a Write, until a reset has
// moved the client on (moved closes), the client is closed, or
// InputTimeout passes.
func (c *Client) awaitMove(s *Session, moved <-chan struct{}) error {
	t := s.clock.NewTimer(s.cfg.InputTimeout)
	defer t.Stop()
	select {
	case <-moved:
		return nil
	case <-c.done:
		return c.Cause()
	case <-t.Chan():
		return ErrInputStalled
	}
}

// ReadOnly reports whether the client is an observer (and was not granted
// write access: presence.go).
func (c *Client) ReadOnly() bool { return c.who.ReadOnly && !c.granted.Load() }

// Resize tells the session this client's window size; the session's size
// policy decides the shell's (see sizepolicy.go). Sizes outside 1..MaxDim
// are refused with ErrBadSize. An observer's size is checked but never
// applied: its terminal shows the shell at the shell's size.
func (c *Client) Resize(size Size) error {
	if !size.Valid() {
		return ErrBadSize
	}
	s, _ := c.session()
	s.mu.Lock()
	s.wantSizeLocked(c, size)
	s.mu.Unlock()
	return nil
}

// Detach leaves the session; the shell keeps running. Take then returns
// ErrDetached.
func (c *Client) Detach() {
	if c.close(ErrDetached, true) {
		s, _ := c.session()
		s.detach(c) // no-op while a reset moves the client: the move skips it
	}
}

// enqueueResult says what became of a chunk offered to a client.
type enqueueResult int

const (
	enqueued enqueueResult = iota
	// alreadyClosed: the client was closed by someone else (a detach racing
	// the output); whoever closed it reports it.
	alreadyClosed
	// droppedSlow: this chunk overflowed the queue; the client is now
	// closed with ErrSlowClient.
	droppedSlow
	// overflowed: the chunk was not queued: it would overflow the queue,
	// or the client is behind; the session brings the client forward or
	// drops it (skip.go).
	overflowed
	// fellBehind: the client's backlog was discarded (skip.go).
	fellBehind
	// stillBehind: the chunk was counted as skipped (skip.go).
	stillBehind
)

// enqueue adds a chunk without blocking. Called with Session.mu held.
func (c *Client) enqueue(chunk []byte) enqueueResult {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return alreadyClosed
	}
	if c.skip.behind || c.queued+len(chunk) > c.limit {
		c.mu.Unlock()
		return overflowed
	}
	c.queue = append(c.queue, chunk)
	c.queued += len(chunk)
	c.mu.Unlock()
	c.signal()
	return enqueued
}

// dropSlow closes the client as too slow; its queue is dropped.
func (c *Client) dropSlow() enqueueResult {
	if c.close(ErrSlowClient, true) {
		return droppedSlow
	}
	return alreadyClosed
}

// close records the cause (the first one wins) and wakes the reader. With
// discard, queued output is dropped; otherwise the reader drains it first.
func (c *Client) close(cause error, discard bool) bool {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return false
	}
	c.cause = cause
	if discard {
		c.queue, c.queued, c.events = nil, 0, nil
	}
	close(c.done)
	after := c.after
	c.after = nil
	c.mu.Unlock()
	c.signal()
	for _, f := range after {
		go f()
	}
	return true
}

func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
