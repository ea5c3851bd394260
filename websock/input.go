package websock

import (
	"errors"
	"sync/atomic"

	"github.com/termgate/termgate/sessions"
)

// inputQueue is how many input messages may wait for the shell behind the
// one being written (each at most maxMessage).
const inputQueue = 4

// inputMsg is one binary message for the shell, with the attach it was
// typed into: input typed before a reset never reaches the fresh shell.
type inputMsg struct {
	client *sessions.Client
	data   []byte
}

// inputState is the connection's input path. The read loop hands messages
// to inputLoop, which alone calls Client.Write, so that the read loop
// always returns to reading the socket: a shell that stops reading its
// input (stty raw -echo; sleep 1000) must not keep a connection whose peer
// has left attached (issue 9 item 4). While the shell takes its input the
// read loop waits for the queue (back-pressure for pastes); once a write
// stalled (sessions.ErrInputStalled) it waits no more and drops what does
// not fit, until the shell takes input again.
type inputState struct {
	ch      chan inputMsg // closed by the read loop when it returns
	done    chan struct{} // closed when inputLoop returns
	stalled atomic.Bool   // the latest write stalled
	told    atomic.Bool   // the user was told about the current stall
	dropped atomic.Int64  // bytes dropped by the read loop, for the log
}

func newInputState() inputState {
	return inputState{ch: make(chan inputMsg, inputQueue), done: make(chan struct{})}
}

// input queues p for the shell (called by the read loop only). An
// observer's input is dropped here (sessions would refuse it too), with
// one error event per connection, so a page that keeps sending keys is not
// answered with an event per key.
func (c *conn) input(p []byte) {
	cl := c.current()
	if cl == nil {
		return
	}
	if cl.ReadOnly() { // the token's, unless a writer granted write access
		if !c.toldRO.Swap(true) {
			c.log.Debug("an observer typed; its input is dropped", "bytes", len(p))
			c.send(*errorFrame(msgReadOnlyInput))
		}
		return
	}
	m := inputMsg{client: cl, data: p}
	if !c.in.stalled.Load() {
		select {
		case c.in.ch <- m:
		case <-cl.Done(): // the attach ended (exit, revoked...): the input goes nowhere
		}
		return
	}
	select {
	case c.in.ch <- m:
	default:
		c.in.dropped.Add(int64(len(p)))
	}
}

// inputLoop writes queued input to the shell until the read loop closes the
// queue; what is queued by then is written to attaches that are detached,
// which return at once.
func (c *conn) inputLoop() {
	defer close(c.in.done)
	for m := range c.in.ch {
		_, err := m.client.Write(m.data)
		switch {
		case err == nil:
			if c.in.stalled.Swap(false) {
				c.log.Info("the shell reads its input again", "dropped_bytes", c.in.dropped.Swap(0))
				c.in.told.Store(false)
			}
		case errors.Is(err, sessions.ErrInputStalled):
			c.in.stalled.Store(true)
			if !c.in.told.Swap(true) {
				c.log.Info("the shell is not reading its input; dropping input", "bytes", len(m.data))
				c.send(*errorFrame(msgInputStalled))
			}
		default: // the attach ended under an exit, a revocation, a detach
			c.log.Debug("input dropped", "bytes", len(m.data), "err", err)
		}
	}
}

// Observers read these: their input and their resets are refused.
const (
	msgReadOnlyInput = "[termgate] read-only: your input is not sent to the shell (this token is read-only)"
)

// msgInputStalled is the notice a client gets once per stall.
var msgInputStalled = "[termgate] " + sessions.ErrInputStalled.Error()
