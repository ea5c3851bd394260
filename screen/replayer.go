package screen

import (
	"sync"
	"time"

	"github.com/termgate/termgate/internal/ring"
	"github.com/termgate/termgate/screen/sanitize"
	"github.com/termgate/termgate/sessions"
)

// Options configure the replayers made by NewReplayerFunc.
type Options struct {
	// Scrollback bounds the rendered scrollback kept per session, in bytes
	// (default 64 KiB).
	Scrollback int
	// Queue bounds the output waiting for the emulator, in bytes (default
	// 1 MiB). Beyond it the emulator stops following and the next snapshot
	// rebuilds it from the session's raw ring.
	Queue int
	// Lazy is how long output may wait for the emulator while a client is
	// attached (default 50ms), and Batch how much (default 64 KiB): the
	// emulator is fed in batches, after the output has reached the
	// clients, instead of being woken for every chunk. A snapshot feeds
	// what waits first, so a reattach still sees every byte.
	Lazy  time.Duration
	Batch int
}

// NewReplayerFunc returns the sessions.Config.NewReplayer that keeps each
// session's terminal state in a Terminal.
func NewReplayerFunc(o Options) sessions.NewReplayerFunc {
	if o.Scrollback <= 0 {
		o.Scrollback = 64 << 10
	}
	if o.Queue <= 0 {
		o.Queue = 1 << 20
	}
	if o.Lazy <= 0 {
		o.Lazy = 50 * time.Millisecond
	}
	if o.Batch <= 0 {
		o.Batch = 64 << 10
	}
	return func(ring *ring.Buffer, answer func([]byte)) sessions.Replayer {
		return newReplayer(ring, answer, o)
	}
}

// itemCost is what an item counts for at least against Options.Queue, so
// that resizes between tiny chunks of output cannot queue without bound.
const itemCost = 64

// item is one event for the emulator, in output order.
type item struct {
	data     []byte        // output (shared with the session's clients; never modified)
	size     sessions.Size // a resize when data is nil
	answered bool          // no client was attached: the emulator answers queries
}

// Replayer feeds a session's output to a Terminal on its own goroutine, so
// the session's relay never waits for the emulator.
//
// While a client is attached the emulator is fed lazily: a chunk does not
// wake the worker (a wake-up per chunk put the emulator's goroutine beside
// the client's writer on every keystroke's echo, competing for the CPUs);
// a timer (Options.Lazy) or a full batch (Options.Batch) does, and Replay
// feeds whatever still waits before it takes the snapshot. With no client
// attached every chunk wakes the worker at once: the emulator answers the
// terminal queries then, and the shell waits for the answers.
//
// Lock order: the session's lock, then emuMu, then mu. The session calls
// Write, Resize, Attached and Replay with its lock held; the worker holds
// emuMu while feeding and never takes the session's lock.
type Replayer struct {
	ring   *ring.Buffer // read only by Replay (session lock)
	answer func([]byte)
	opts   Options

	attached int           // clients attached (session lock)
	size     sessions.Size // latest size (session lock)

	emuMu   sync.Mutex // guards the fields below
	term    *Terminal
	replies [][]byte // answers to queries, sent by the worker
	answers bool     // the item being fed is answered by the emulator

	broken bool // the emulator panicked: replay the raw ring from now on (emuMu)

	mu       sync.Mutex // guards the fields below
	queue    []item
	queued   int  // bytes in queue
	overflow bool // output was dropped: rebuild from the ring before the next snapshot
	armed    bool // timer runs for what is queued

	timer *time.Timer // wakes the worker Lazy after the first chunk of a batch
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newReplayer(ring *ring.Buffer, answer func([]byte), o Options) *Replayer {
	r := &Replayer{
		ring: ring, answer: answer, opts: o,
		size:  sessions.Size{Cols: 80, Rows: 24},
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		timer: time.NewTimer(time.Hour),
	}
	r.timer.Stop()
	r.term = r.newTerminal()
	go r.run()
	return r
}

func (r *Replayer) newTerminal() *Terminal {
	t := New(int(r.size.Cols), int(r.size.Rows), r.opts.Scrollback)
	t.Reply = r.reply
	return t
}

// reply collects an answer to a query (emuMu held).
func (r *Replayer) reply(p []byte) {
	if r.answers && len(r.replies) < 64 {
		r.replies = append(r.replies, p)
	}
}

// Write queues output for the emulator without waiting for it.
func (r *Replayer) Write(p []byte) {
	r.push(item{data: p, answered: r.attached == 0})
}

// Resize queues a size change, in order with the output.
func (r *Replayer) Resize(size sessions.Size) {
	r.size = size
	r.push(item{size: size})
}

// Prepare feeds the emulator what waits for it, without the session's
// lock (sessions.Redrawer: Replay redraws the whole terminal state, so a
// lagging client is brought forward with it instead of being dropped):
// the Replay that follows, under the lock, then has little left to feed,
// and the session's output waits for it as little as possible. After an
// overflow it does nothing: Replay rebuilds from the ring.
func (r *Replayer) Prepare() {
	r.emuMu.Lock()
	r.drainLocked()
	replies := len(r.replies) > 0
	r.emuMu.Unlock()
	if replies { // the worker sends them
		r.signal()
	}
}

// Attached records the number of attached clients.
func (r *Replayer) Attached(n int) { r.attached = n }

func (r *Replayer) push(it item) {
	r.mu.Lock()
	cost := max(len(it.data), itemCost)
	switch {
	case r.overflow:
	case it.data == nil && len(r.queue) > 0 && r.queue[len(r.queue)-1].data == nil:
		// Only the latest of sizes with no output between them matters:
		// a resize storm (issue 20 D4) costs the emulator one resize per
		// batch of output, not one per message.
		r.queue[len(r.queue)-1] = it
	case r.queued+cost > r.opts.Queue:
		// The emulator fell behind: stop feeding it until a snapshot
		// rebuilds it from the ring (at the latest size).
		r.overflow = true
		r.queue, r.queued = nil, 0
	default:
		r.queue = append(r.queue, it)
		r.queued += cost
	}
	now := it.answered || r.queued >= r.opts.Batch
	arm := !now && !r.armed && len(r.queue) > 0
	if arm {
		r.armed = true
	}
	r.mu.Unlock()
	switch {
	case now:
		r.signal()
	case arm:
		r.timer.Reset(r.opts.Lazy)
	}
}

func (r *Replayer) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Replayer) run() {
	defer close(r.done)
	for {
		select {
		case <-r.wake:
		case <-r.timer.C:
		case <-r.stop:
			return
		}
		r.mu.Lock()
		r.armed = false // what comes after the drain below arms again
		r.mu.Unlock()
		r.emuMu.Lock()
		r.drainLocked()
		replies := r.replies
		r.replies = nil
		r.emuMu.Unlock()
		for _, p := range replies {
			r.answer(p)
		}
	}
}

// drainLocked feeds everything queued to the emulator (emuMu held). An
// emulator bug must not take the gateway down: a panic marks the replayer
// broken and it falls back to the raw replay.
func (r *Replayer) drainLocked() {
	if r.broken {
		return
	}
	defer r.recoverLocked()
	for {
		r.mu.Lock()
		q := r.queue
		r.queue, r.queued = nil, 0
		r.mu.Unlock()
		if len(q) == 0 {
			return
		}
		for _, it := range q {
			if it.data == nil {
				r.term.Resize(int(it.size.Cols), int(it.size.Rows))
				continue
			}
			r.answers = it.answered
			r.term.Write(it.data)
		}
		r.answers = false
	}
}

func (r *Replayer) recoverLocked() {
	if v := recover(); v != nil {
		r.broken = true
		r.term = nil
		r.mu.Lock()
		r.overflow = true // stop queueing
		r.queue, r.queued = nil, 0
		r.mu.Unlock()
	}
}

// Replay catches the emulator up with the output (or rebuilds it from the
// ring when it fell too far behind) and returns its snapshot.
func (r *Replayer) Replay() []byte {
	r.emuMu.Lock()
	defer r.emuMu.Unlock()
	raw := func() []byte { return sanitize.Replay(r.ring.Bytes(), r.ring.Start() > 0) }
	if r.broken {
		return raw()
	}
	r.mu.Lock()
	overflow := r.overflow
	r.overflow = false
	if overflow {
		r.queue, r.queued = nil, 0
	}
	r.mu.Unlock()
	if overflow {
		// The ring holds the latest output; what came before it is lost,
		// so the rebuilt terminal starts from a clean boundary in it.
		r.term = r.newTerminal()
		r.protectLocked(func() { r.term.Write(raw()) })
	} else {
		r.drainLocked()
	}
	var snap []byte
	r.protectLocked(func() { snap = r.term.Snapshot() })
	if r.broken {
		return raw()
	}
	if len(r.replies) > 0 { // let the worker send them: answer may not be called here
		r.signal()
	}
	return snap
}

// protectLocked runs f on the emulator, turning a panic into the raw
// fallback (emuMu held).
func (r *Replayer) protectLocked(f func()) {
	if r.broken {
		return
	}
	defer r.recoverLocked()
	f()
}

// Close stops the worker and waits for it.
func (r *Replayer) Close() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
	r.timer.Stop()
}
