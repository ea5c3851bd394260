package sessions

import (
	"sync"
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
	// Replay is how many bytes of replay Read returns before live output, so
	// a client can resume from Offset + (bytes received - Replay).
	Replay int
	// Gap reports that a resume was asked for but its offset is no longer
	// buffered, so the normal replay was sent instead.
	Gap bool
}

// Client is one attached terminal. Read returns the replay, then live
// output; once the session is gone under it, Read drains what was queued and
// then returns the cause (*ResetError, *ExitError, *RevokedError, ErrIdle,
// ErrInstanceGone, ErrSlowClient, ErrShutdown, ErrBackendLost). Done is
// closed at the same moment, so a listener can select on it.
type Client struct {
	sess    *Session
	info    AttachInfo
	label   string
	since   time.Time
	allowed func(instance string) error // nil: no re-check
	who     Attached
	done    chan struct{} // closed with the first cause

	mu     sync.Mutex // guards the fields below
	queue  [][]byte   // chunks not yet read; shared, never modified
	head   int        // bytes of queue[0] already read
	queued int        // bytes waiting in queue
	limit  int        // queued bytes allowed before the client is dropped
	cause  error      // set once: why the client is closed
	wake   chan struct{}
}

func newClient(s *Session, info AttachInfo, opts AttachOptions, limit int) *Client {
	return &Client{
		sess: s, info: info, label: opts.Label, allowed: opts.Allowed, limit: limit,
		wake: make(chan struct{}, 1), done: make(chan struct{}), since: s.clock.Now(),
		who: Attached{Who: opts.Who, Via: opts.Via, Remote: opts.Remote, Since: s.clock.Now(), ReadOnly: opts.ReadOnly},
	}
}

// Done is closed once the client is closed, for whatever cause; queued
// output may still be waiting for Read.
func (c *Client) Done() <-chan struct{} { return c.done }

// Cause returns why the client was closed, or nil while it is attached.
func (c *Client) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Info returns where the attach landed.
func (c *Client) Info() AttachInfo { return c.info }

// Read copies queued output into p, blocking until there is some or the
// client is closed.
func (c *Client) Read(p []byte) (int, error) {
	for {
		c.mu.Lock()
		if c.queued > 0 {
			n := 0
			for n < len(p) && len(c.queue) > 0 {
				k := copy(p[n:], c.queue[0][c.head:])
				n += k
				c.head += k
				if c.head == len(c.queue[0]) {
					c.queue[0] = nil
					c.queue = c.queue[1:]
					c.head = 0
				}
			}
			c.queued -= n
			c.mu.Unlock()
			return n, nil
		}
		if c.cause != nil {
			err := c.cause
			c.mu.Unlock()
			return 0, err
		}
		c.mu.Unlock()
		<-c.wake
	}
}

// Write sends input to the shell. It blocks while the shell takes the
// input, but returns early with the client's cause once the client is
// closed (a Detach from another goroutine unblocks it), and with
// ErrInputStalled when the shell took nothing for Config.InputTimeout; the
// bytes not written by then are dropped.
func (c *Client) Write(p []byte) (int, error) {
	if c.who.ReadOnly {
		return 0, ErrReadOnly
	}
	return c.sess.input(c, p)
}

// ReadOnly reports whether the client is an observer.
func (c *Client) ReadOnly() bool { return c.who.ReadOnly }

// Resize asks for a new window size (the latest request wins, see README).
// Sizes outside 1..MaxDim are refused with ErrBadSize.
// An observer's size is checked but never applied: its terminal shows the
// shell at the shell's size.
func (c *Client) Resize(size Size) error {
	if c.who.ReadOnly {
		if !size.Valid() {
			return ErrBadSize
		}
		return nil
	}
	return c.sess.resize(size)
}

// Detach leaves the session; the shell keeps running. A blocked Read returns
// ErrDetached.
func (c *Client) Detach() {
	if c.close(ErrDetached, true) {
		c.sess.detach(c)
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
)

// enqueue adds a chunk without blocking. Called with Session.mu held.
func (c *Client) enqueue(chunk []byte) enqueueResult {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return alreadyClosed
	}
	if c.queued+len(chunk) > c.limit {
		c.mu.Unlock()
		if c.close(ErrSlowClient, true) {
			return droppedSlow
		}
		return alreadyClosed
	}
	c.queue = append(c.queue, chunk)
	c.queued += len(chunk)
	c.mu.Unlock()
	c.signal()
	return enqueued
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
		c.queue, c.head, c.queued = nil, 0, 0
	}
	close(c.done)
	c.mu.Unlock()
	c.signal()
	return true
}

func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
