package sshd

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/sessions"
)

// input starts copying the client's keystrokes to the session and returns
// the function that stops it and waits for what it started (run calls it
// once the client is detached and the channel ended). Input typed while a
// reset moves the client waits for the move (in sessions) and goes to the
// fresh shell; an observer's is dropped (sessions refuses it with
// ErrReadOnly; the observer is told once).
//
// The channel's pump writes each chunk itself (inbox.deliverTo), so a
// keystroke reaches the session without a hand-off between goroutines and
// an attached client needs no goroutine for its input. While a write waits
// (at most the registry's InputTimeout) the channel is not read, and
// x/crypto's window holds the client back, as a full inbox did before.
func (r *relay) input() (stop func()) {
	w := &inputWriter{r: r}
	if r.sess.pty != nil { // OpenSSH's escapes work on a terminal only
		w.esc = newEscScanner()
	}
	in := r.sess.in
	done := make(chan struct{})
	if in.deliverTo(w.write) {
		close(done)
	} else { // typed ahead: written from a goroutine of its own, then the pump takes over
		go func() {
			defer close(done)
			in.deliverQueued(w.write)
		}()
	}
	return func() {
		<-done
		in.stopDelivery()
		w.stop()
	}
}

// inputWriter writes a relay's input to its session. When a write gives up
// with ErrInputStalled (the shell took nothing for InputTimeout) the user
// is told once, and until the shell takes input again what the client
// types is dropped at once: one chunk at a time is offered to the shell by
// a retry goroutine, started at the first stall, so that reading the
// channel never waits for a shell that takes no input. The channel keeps
// being read, its window never fills in x/crypto, and a connection that
// closes is noticed and detached whatever the shell does.
//
// Writes never overlap, so input keeps its order: the caller writes only
// while not stalled, the retry goroutine only while stalled, and stalled
// clears in the same critical section that marks the retry goroutine idle.
type inputWriter struct {
	r            *relay
	toldReadOnly atomic.Bool
	// esc finds ~. at the start of a line (escape.go); nil without a
	// terminal. escOut is its output buffer. Both are used by write
	// alone, whose calls never overlap.
	esc    *escScanner
	escOut []byte

	mu       sync.Mutex  // guards the fields below
	stalled  bool        // the last write gave up; input is dropped
	retrying bool        // the retry goroutine is writing a chunk
	retry    chan []byte // to the retry goroutine (capacity 1); nil until the first stall
	done     chan struct{}
}

// write writes p (which the caller reuses once write returns) or drops it
// while the shell takes no input.
func (w *inputWriter) write(p []byte) {
	if w.esc != nil {
		var detach bool
		w.escOut, detach = w.esc.feed(w.escOut[:0], p)
		p = w.escOut
		if detach {
			if len(p) > 0 {
				w.writeOn(p)
			}
			w.r.escapeDetach()
			return
		}
		if len(p) == 0 {
			return // a held ~
		}
	}
	w.writeOn(p)
}

// writeOn is write after the escape scan.
func (w *inputWriter) writeOn(p []byte) {
	q := bytes.Clone(p) // a write that gives up may still be in the session's queue
	w.mu.Lock()
	if w.stalled {
		if !w.retrying { // the shell gets another try
			w.retrying = true
			w.retry <- q
		} // else dropped: the shell still takes nothing
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.outcome(w.r.current().Write(q))
}

// retryLoop writes what write hands it while stalled; a write that goes
// in ends the stall.
func (w *inputWriter) retryLoop(retry <-chan []byte, done chan<- struct{}) {
	defer close(done)
	for q := range retry {
		_, err := w.r.current().Write(q)
		w.mu.Lock()
		w.retrying = false
		if err == nil {
			w.stalled = false
		}
		w.mu.Unlock()
		if err != nil && !errors.Is(err, sessions.ErrInputStalled) {
			w.outcome(0, err)
		}
	}
}

// outcome handles the result of a write outside a stall.
func (w *inputWriter) outcome(_ int, err error) {
	switch {
	case err == nil:
	case errors.Is(err, sessions.ErrReadOnly):
		// An observer: its keys are dropped by the session; it is told
		// once, so its screen is not littered.
		if !w.toldReadOnly.Swap(true) {
			w.r.sess.log.Debug("an observer typed; its input is dropped", "instance", w.r.name)
			_ = w.r.notice(w.r.sess.stderr(), readOnlyNotice)
		}
	case errors.Is(err, sessions.ErrInputStalled):
		w.mu.Lock()
		w.stalled = true
		if w.retry == nil {
			w.retry, w.done = make(chan []byte, 1), make(chan struct{})
			go w.retryLoop(w.retry, w.done)
		}
		w.mu.Unlock()
		w.r.sess.log.Info("the shell is not reading its input; dropping input", "instance", w.r.name)
		_ = w.r.notice(w.r.sess.stderr(), err.Error())
	}
}

// stop ends the retry goroutine, if any, and waits for it: its write ends
// when the client is detached (run detaches before it waits for input).
func (w *inputWriter) stop() {
	w.mu.Lock()
	retry, done := w.retry, w.done
	w.retry = nil
	w.mu.Unlock()
	if retry != nil {
		close(retry)
		<-done
	}
}

// readOnlyNotice is what an observer reads the first time it types.
const readOnlyNotice = "read-only: your input is not sent to the shell"

// writeGuard times the writes to the SSH channel that are in progress.
type writeGuard struct {
	mu     sync.Mutex // guards the fields below
	next   uint64
	active map[uint64]time.Time // start of each write in progress
}

// do runs the write f and returns its error.
func (g *writeGuard) do(f func() error) error {
	g.mu.Lock()
	if g.active == nil {
		g.active = map[uint64]time.Time{}
	}
	g.next++
	id := g.next
	g.active[id] = time.Now()
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.active, id)
		g.mu.Unlock()
	}()
	return f()
}

// blockedFor is how long the oldest write in progress has been blocked.
func (g *writeGuard) blockedFor() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var oldest time.Time
	for _, at := range g.active {
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return time.Since(oldest)
}

// A client that takes no output (its window or its TCP connection full)
// would keep the connection and the relay's goroutines forever, since
// x/crypto's writes have no deadline. So once the client is closed
// (dropped as too slow, detached, revoked, reset, shutdown), run starts
// watchClosed, which closes the whole connection when a write to the
// channel stays blocked for CloseGrace. While the client is attached
// nothing is timed: the registry brings forward a client that falls
// behind (skip.go) and drops one that stays behind without taking output
// for its StuckTimeout, or drops it at once with --replay raw. The
// notice is written when it can be: a client that reads again before
// CloseGrace gets it.

// watchClosed times the writes to the channel after c was closed, until
// stop is closed or it closed the connection.
func (r *relay) watchClosed(stop <-chan struct{}, c *sessions.Client, grace time.Duration) {
	closedAt := time.Now() // the grace runs from the client's end, not from the write's start
	tick := time.NewTicker(grace / 4)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if d := r.guard.blockedFor(); d >= grace && time.Since(closedAt) >= grace {
			cause := "detached"
			if err := c.Cause(); err != nil {
				cause = err.Error()
			}
			r.sess.log.Info("the client takes no output; closing the connection", "instance", r.name, "blocked", d.Round(time.Millisecond), "cause", cause)
			r.sess.closeConn()
			return
		}
	}
}
