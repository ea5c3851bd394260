package sshd

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/sessions"
)

// input copies the client's keystrokes to the session. Input typed while
// a reset moves the client waits for the move (in sessions) and goes to
// the fresh shell; an observer's is dropped (sessions refuses it with
// ErrReadOnly; the observer is told once).
//
// Writes go through one writer goroutine so that reading the channel never
// waits for a shell that takes no input: Client.Write gives up after the
// registry's InputTimeout with ErrInputStalled; the user is told once, and
// until a write goes in again what the client types is read and dropped at
// once (one chunk at a time is offered to the shell). So the channel keeps
// being read, its window never fills in x/crypto, and a connection that
// closes is noticed and detached whatever the shell does.
func (r *relay) input() {
	chunks := make(chan []byte)
	writerDone := make(chan struct{})
	var stalled atomic.Bool
	go func() {
		defer close(writerDone)
		toldReadOnly := false
		for p := range chunks {
			_, err := r.current().Write(p)
			switch {
			case err == nil:
				stalled.Store(false)
			case errors.Is(err, sessions.ErrReadOnly):
				// An observer: its keys are dropped by the session; it
				// is told once, so its screen is not littered.
				if !toldReadOnly {
					toldReadOnly = true
					r.sess.log.Info("an observer typed; its input is dropped", "instance", r.name)
					_ = r.notice(r.sess.Stderr(), readOnlyNotice)
				}
			case errors.Is(err, sessions.ErrInputStalled):
				if !stalled.Swap(true) {
					r.sess.log.Info("the shell is not reading its input; dropping input", "instance", r.name)
					_ = r.notice(r.sess.Stderr(), err.Error())
				}
			}
		}
	}()
	defer func() {
		close(chunks)
		<-writerDone
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.sess.Read(buf)
		if n > 0 {
			p := append([]byte(nil), buf[:n]...)
			if stalled.Load() {
				select {
				case chunks <- p: // the writer is free: the shell gets another try
				default: // dropped: the shell still takes nothing
				}
			} else {
				chunks <- p // waits at most InputTimeout
			}
		}
		if err != nil {
			return // io.EOF: the client sent EOF or the channel closed
		}
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

// watch closes the whole connection when a write to the channel stays
// blocked for CloseGrace once the current client was closed (dropped as too
// slow, detached, revoked, reset, shutdown): a client that takes no output
// (its window or its TCP connection full) would otherwise keep the
// connection and the relay's goroutines forever, since x/crypto's writes
// have no deadline. While the client is attached nothing is timed (the
// registry drops a client that falls behind). The notice is written when
// it can be: a client that reads again before CloseGrace gets it. watch
// returns when stop is closed.
func (r *relay) watch(stop <-chan struct{}) {
	grace := r.srv.cfg.CloseGrace
	for {
		c := r.current()
		select {
		case <-stop:
			return
		case <-c.Done():
		}
		if !r.watchClosed(stop, c, grace) {
			return
		}
	}
}

// watchClosed times the writes after c was closed until a live client
// replaces it (true) or stop is closed or the connection was closed
// (false).
func (r *relay) watchClosed(stop <-chan struct{}, c *sessions.Client, grace time.Duration) bool {
	closedAt := time.Now() // the grace runs from the client's end, not from the write's start
	tick := time.NewTicker(grace / 4)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return false
		case <-tick.C:
		}
		if d := r.guard.blockedFor(); d >= grace && time.Since(closedAt) >= grace {
			cause := "detached"
			if err := c.Cause(); err != nil {
				cause = err.Error()
			}
			r.sess.log.Info("the client takes no output; closing the connection", "instance", r.name, "blocked", d.Round(time.Millisecond), "cause", cause)
			closeConn(r.sess)
			return false
		}
		if cur := r.current(); cur != c {
			select {
			case <-cur.Done():
			default:
				return true
			}
		}
	}
}
