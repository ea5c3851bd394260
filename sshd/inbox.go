package sshd

import (
	"io"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// inboxSize bounds the client data the gateway holds per channel beyond
// what x/crypto holds. x/crypto grants every channel a fixed 2 MiB window
// and keeps whatever the client sends in a list of its packets, about 48
// bytes of heap per byte when the client sends one-byte packets, until the
// channel is read. So the gateway never lets a channel's data sit there: a
// pump reads it as it arrives into an inbox of inboxSize bytes, which the
// session's Read drains.
const inboxSize = 64 << 10

// unstartedGrace is how long a channel whose inbox filled before it asked
// for a shell or command is given for that request to be seen (it may be
// on its way through the request filter) before the channel is closed.
const unstartedGrace = 500 * time.Millisecond

// inbox is the channel's stdin as the session reads it. A pump goroutine
// (pump) moves the channel's data into buf. Until the channel starts (a
// shell or exec request), data beyond inboxSize closes the channel: no
// legitimate client sends that much before its request. Once started, a
// full inbox stops the pump until the session reads (flow control for
// pastes), or, once a relay called deliverTo, the pump hands each chunk to
// the relay itself and waits for it; a session that does not read its input
// (reset, list, help) and a channel that closed make the pump discard
// instead.
type inbox struct {
	mu      sync.Mutex // guards the fields below
	cond    *sync.Cond // signalled when buf, started, discard, err, sink or sinking change
	buf     []byte
	err     error // the channel read's error (io.EOF), once buf is drained
	started bool
	discard bool
	sink    func([]byte) // set by deliverTo: the pump hands data to it directly
	sinking bool         // the pump is in a sink call
	stopped bool         // stopDelivery was called: no sink any more
	onEOF   func()       // set by notifyEOF: called once the client's input ended
}

func newInbox() *inbox {
	in := &inbox{}
	in.cond = sync.NewCond(&in.mu)
	return in
}

// pump reads ch into the inbox until ch's reads end; onAbuse is called
// (once) when the channel sent more than inboxSize bytes before it
// started. After that the pump keeps draining: x/crypto grants no more
// window once the channel is closed, so what is left is bounded.
func (in *inbox) pump(ch gossh.Channel, onAbuse func()) {
	// Keystrokes are small: start with a small buffer, grow for a paste.
	tmp := make([]byte, 1<<10)
	for {
		in.mu.Lock()
		room := inboxSize - len(in.buf)
		if room <= 0 && !in.discard && !in.started {
			in.mu.Unlock()
			if in.waitStarted(unstartedGrace) && in.abandonUnstarted() {
				onAbuse()
			}
			continue
		}
		for room <= 0 && !in.discard {
			in.cond.Wait() // started: the session reads, or discard is set
			room = inboxSize - len(in.buf)
		}
		discard := in.discard
		in.mu.Unlock()
		n := len(tmp)
		if !discard && room < n {
			n = room
		}
		n, err := ch.Read(tmp[:n])
		in.mu.Lock()
		if n > 0 && !in.discard {
			if f := in.sink; f != nil && len(in.buf) == 0 {
				// The relay's input, written from this goroutine: no
				// hand-off per keystroke. While f blocks the channel is
				// not read (x/crypto's window is the flow control).
				in.sinking = true
				in.mu.Unlock()
				f(tmp[:n])
				in.mu.Lock()
				in.sinking = false
			} else {
				in.buf = append(in.buf, tmp[:n]...)
			}
		}
		var eof func()
		if err != nil {
			in.err = err
			eof, in.onEOF = in.onEOF, nil
		}
		in.cond.Broadcast()
		in.mu.Unlock()
		if err != nil {
			if eof != nil && err == io.EOF {
				eof()
			}
			return
		}
		if n == len(tmp) && len(tmp) < 32<<10 {
			tmp = make([]byte, 32<<10)
		}
	}
}

// waitStarted waits up to d for the channel to start or to be discarded;
// it reports whether d passed.
func (in *inbox) waitStarted(d time.Duration) (expired bool) {
	t := time.AfterFunc(d, func() {
		in.mu.Lock()
		in.cond.Broadcast()
		in.mu.Unlock()
	})
	defer t.Stop()
	deadline := time.Now().Add(d)
	in.mu.Lock()
	defer in.mu.Unlock()
	for !in.started && !in.discard && time.Now().Before(deadline) {
		in.cond.Wait()
	}
	return !in.started && !in.discard
}

// start marks the channel started: its data is kept for the session. It
// reports false when the channel was already abandoned (closed for
// starting nothing in time, or for sending too much first).
func (in *inbox) start() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.discard {
		return false
	}
	in.started = true
	in.cond.Broadcast()
	return true
}

// abandonUnstarted makes a channel that has not started discard its data
// from now on, and reports whether it did (false: it started). start and
// abandonUnstarted exclude each other: a channel is either run or closed.
func (in *inbox) abandonUnstarted() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.started {
		return false
	}
	in.discard, in.buf = true, nil
	in.cond.Broadcast()
	return true
}

// setDiscard drops what the inbox holds and everything still to come.
func (in *inbox) setDiscard() {
	in.mu.Lock()
	in.discard = true
	in.buf = nil
	in.cond.Broadcast()
	in.mu.Unlock()
}

// deliverTo makes the pump hand the client's data to f, in the pump's
// goroutine, from now on, so that a keystroke goes from the channel to the
// shell without waking another goroutine. It reports false, and changes
// nothing, when the inbox holds data typed ahead: deliverQueued, run on a
// goroutine of the caller's, then writes that first. f must not keep p
// after it returns; Read must not be used meanwhile; stopDelivery ends it.
func (in *inbox) deliverTo(f func(p []byte)) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.buf) > 0 && !in.discard {
		return false
	}
	in.sink = f
	in.cond.Broadcast()
	return true
}

// deliverQueued hands what the inbox holds to f, then what arrives
// meanwhile, and makes the pump hand it everything after that (as
// deliverTo). It returns once the inbox is drained or discards.
func (in *inbox) deliverQueued(f func(p []byte)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(in.buf) > 0 && !in.discard {
		p := in.buf
		in.buf = nil
		in.cond.Broadcast() // room for the pump
		in.mu.Unlock()
		f(p)
		in.mu.Lock()
	}
	if !in.stopped {
		in.sink = f
		in.cond.Broadcast()
	}
}

// notifyEOF makes the pump call f (on its goroutine, once) when the
// client sends EOF; at once if it did already. f must not block.
func (in *inbox) notifyEOF(f func()) {
	in.mu.Lock()
	if in.err == nil {
		in.onEOF = f
		in.mu.Unlock()
		return
	}
	eof := in.err == io.EOF
	in.mu.Unlock()
	if eof {
		f()
	}
}

// stopDelivery makes the pump keep what arrives from now on (a discarding
// inbox drops it) and waits until no call of the sink is in progress.
func (in *inbox) stopDelivery() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.sink, in.stopped = nil, true
	for in.sinking {
		in.cond.Wait()
	}
}

// Read reads the client's data; io.EOF once the client sent EOF or the
// channel closed and everything before was read.
func (in *inbox) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(in.buf) == 0 && in.err == nil && !in.discard {
		in.cond.Wait()
	}
	if len(in.buf) == 0 {
		if in.discard {
			return 0, io.EOF // the session is ending or reads no input
		}
		return 0, in.err
	}
	n := copy(p, in.buf)
	in.buf = in.buf[:copy(in.buf, in.buf[n:])]
	if len(in.buf) == 0 {
		in.buf = nil // an idle channel holds no buffer
	}
	in.cond.Broadcast()
	return n, nil
}
