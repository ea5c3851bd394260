package record

import (
	"log/slog"
	"sync"
	"time"

	"github.com/termgate/termgate/sessions"
)

// Recording is one session's asciicast file. Output, Resize and Close
// never block on the disk: they queue, and the recording's goroutine
// writes.
type Recording struct {
	r        *Recorder
	instance string
	file     string // the file's name in the instance's directory
	name     string // INSTANCE/SESSION.cast, under the name the session started with
	renamed  string // the instance's name after its last rename (the run goroutine's; see rename.go)
	cutBy    string // the limit that cut the recording (the run goroutine's; see budget.go)
	log      *slog.Logger
	start    time.Time
	header   []byte
	wake     chan struct{} // buffered 1: the queue has something, or Close
	done     chan struct{} // closed when run has returned
	prev     chan struct{} // the done of this session's previous recording, if any

	// A held session's output numbering: Output's first chunk is byte
	// offset+len(replay); replay is the holder's buffered output.
	held   bool
	offset int64
	replay []byte
	size   sessions.Size // the window size at the start

	mu      sync.Mutex // guards the fields below
	cur     string     // name, or where a rename moves the file (Recording)
	queue   []event
	queued  int           // bytes of output in queue
	last    time.Duration // time of the latest queued event
	dropped int64         // output bytes dropped since the last marker
	inLost  int64         // input bytes dropped since the last marker
	lost    *sessions.Size
	closed  bool // Close was called
	stopped bool // the goroutine gave up (an error): nothing more is queued
}

type event struct {
	at   time.Duration
	kind byte // 'o', 'i', 'r', 'm', or 'n' (the instance was renamed data: rename.go)
	data []byte
	size sessions.Size
	n    int64 // 'm': bytes dropped
	in   bool  // 'm': of input
}

// eventCost is what an event costs in the queue besides its data.
const eventCost = 64

// Recording names the file relative to the recording directory
// (sessions.Recorded), under the instance's current name.
func (rec *Recording) Recording() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.cur
}

// Output queues a chunk of the session's output (kept, never modified).
// When the queue is full the chunk is dropped and counted.
func (rec *Recording) Output(chunk []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.closed || rec.stopped {
		return
	}
	if rec.queued+len(chunk)+eventCost > rec.r.cfg.QueueBytes {
		rec.dropped += int64(len(chunk))
		return
	}
	rec.pushLocked(event{kind: 'o', data: chunk}, len(chunk)+eventCost)
}

// Input queues (a copy of) what a client wrote to the shell, when the
// Recorder records input (sessions.InputObserver). When the queue is full
// it is dropped and counted like output.
func (rec *Recording) Input(p []byte) {
	if !rec.r.cfg.Input || len(p) == 0 {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.closed || rec.stopped {
		return
	}
	if rec.queued+len(p)+eventCost > rec.r.cfg.QueueBytes {
		rec.inLost += int64(len(p))
		return
	}
	rec.pushLocked(event{kind: 'i', data: append([]byte(nil), p...)}, len(p)+eventCost)
}

// Resize queues a window size change.
func (rec *Recording) Resize(size sessions.Size) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.closed || rec.stopped {
		return
	}
	if rec.queued+eventCost > rec.r.cfg.QueueBytes {
		rec.lost = &size // written once there is room again
		return
	}
	rec.pushLocked(event{kind: 'r', size: size}, eventCost)
}

// pushLocked stamps and queues ev, after the marker of what was dropped
// before it. Stamping under rec.mu keeps the times in queue order.
func (rec *Recording) pushLocked(ev event, cost int) {
	at := rec.r.cfg.Now().Sub(rec.start)
	if at < rec.last {
		at = rec.last // the pump and the resizer race; times never go back
	}
	rec.last = at
	if rec.dropped > 0 {
		rec.queue = append(rec.queue, event{at: at, kind: 'm', n: rec.dropped})
		rec.dropped = 0
		rec.queued += eventCost
	}
	if rec.inLost > 0 {
		rec.queue = append(rec.queue, event{at: at, kind: 'm', n: rec.inLost, in: true})
		rec.inLost = 0
		rec.queued += eventCost
	}
	if rec.lost != nil {
		if ev.kind != 'r' {
			rec.queue = append(rec.queue, event{at: at, kind: 'r', size: *rec.lost})
			rec.queued += eventCost
		}
		rec.lost = nil
	}
	ev.at = at
	rec.queue = append(rec.queue, ev)
	rec.queued += cost
	select {
	case rec.wake <- struct{}{}:
	default:
	}
}

// Close says the session ended: the goroutine writes what is queued,
// syncs and closes the file. It does not wait (Recorder.Close does).
func (rec *Recording) Close() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.closed {
		return
	}
	rec.closed = true
	select {
	case rec.wake <- struct{}{}:
	default:
	}
}

// take returns the queued events and whether Close was called.
func (rec *Recording) take() ([]event, bool, int64) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	q := rec.queue
	rec.queue, rec.queued = nil, 0
	dropped := int64(0)
	if rec.closed {
		dropped = rec.dropped // nothing came after it: its marker ends the file
		rec.dropped = 0
	}
	return q, rec.closed, dropped
}

// stop makes Output and Resize no-ops once the file is gone.
func (rec *Recording) stop() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.stopped = true
	rec.queue, rec.queued = nil, 0
}
