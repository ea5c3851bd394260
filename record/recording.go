package record

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
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
	name     string // INSTANCE/SESSION.cast
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
	kind byte // 'o', 'i', 'r' or 'm'
	data []byte
	size sessions.Size
	n    int64 // 'm': bytes dropped
	in   bool  // 'm': of input
}

// eventCost is what an event costs in the queue besides its data.
const eventCost = 64

// Recording names the file relative to the recording directory
// (sessions.Recorded).
func (rec *Recording) Recording() string { return rec.name }

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

// run creates (or, for a held session, continues) the file and drains the
// queue into it until Close.
func (rec *Recording) run() {
	defer rec.r.ended(rec)
	if rec.prev != nil {
		<-rec.prev
	}
	o, err := rec.open()
	if err != nil {
		rec.stop()
		switch {
		case errors.Is(err, errLocked):
			rec.log.Info("session not recorded by this gateway", "err", err)
		default:
			rec.log.Error("session not recorded", "err", err)
		}
		return
	}
	f := o.f
	if o.file != rec.file {
		rec.log = rec.log.With("recording", filepath.Join(rec.instance, o.file))
	}
	var (
		w       = bufio.NewWriterSize(f, 64<<10)
		enc     encoder
		ienc    = encoder{input: true}
		line    []byte
		written int64
		lost    int64
		// Times in the file: a continued file's are seconds since its
		// header's timestamp and never go below its last event's.
		shift, floor time.Duration
		// pos is the session's number of the next output byte given to
		// enc (held sessions: see the byte-number markers in scan.go).
		pos int64
	)
	fail := func(err error) {
		rec.stop()
		_ = f.Close()
		rec.log.Error("recording stopped: the session goes on unrecorded", "err", err, "bytes_written", written)
	}
	if t := o.cont; t != nil {
		shift = rec.start.Sub(time.Unix(t.header.Timestamp, 0))
		floor = t.last
		written = t.size
	} else {
		if _, err := w.Write(rec.header); err != nil {
			fail(fmt.Errorf("write %s: %w", rec.name, err))
			return
		}
		written = int64(len(rec.header))
	}
	stamp := func(at time.Duration) time.Duration {
		if at += shift; at < floor {
			at = floor
		}
		return at
	}
	last := stamp(0)
	// mark appends the byte-number marker when the line just made does not
	// say how many output bytes it stood for.
	mark := func(dst []byte, from int, at time.Duration, always bool) []byte {
		if rec.held && (always || bytes.Contains(dst[from:], []byte("\ufffd"))) {
			dst = appendOffset(dst, at, pos-int64(len(enc.carry)))
		}
		return dst
	}
	if rec.held {
		line, pos = rec.preamble(line[:0], o, &enc, last)
		line = mark(line, 0, last, false)
		n, err := w.Write(line)
		written += int64(n)
		if err != nil {
			fail(fmt.Errorf("write %s: %w", rec.name, err))
			return
		}
	}
	// cut ends a recording that reached Config.MaxBytes with a marker
	// saying so (the one line allowed past the limit).
	cut := func(at time.Duration) {
		rec.stop()
		max := rec.r.cfg.MaxBytes
		line := appendEvent(nil, at, 'm', []byte(cutMarker+strconv.FormatInt(written, 10)+
			" bytes (--record-max-size "+strconv.FormatInt(max, 10)+"); the session went on unrecorded"))
		_, err := w.Write(line)
		if err == nil {
			err = w.Flush()
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			rec.log.Error("recording not completed", "err", fmt.Errorf("finish %s: %w", rec.name, err))
			return
		}
		rec.log.Warn("recording cut: it reached --record-max-size; the session goes on unrecorded", "max_bytes", max, "bytes_written", written+int64(len(line)))
	}
	for {
		events, closed, dropped := rec.take()
		for _, ev := range events {
			line = line[:0]
			at := stamp(ev.at)
			last = at
			switch ev.kind {
			case 'o':
				pos += int64(len(ev.data))
				line = mark(enc.output(line, at, ev.data), 0, at, false)
			case 'i':
				line = ienc.output(line, at, ev.data)
			case 'r':
				line = appendEvent(line, at, 'r', []byte(strconv.Itoa(ev.size.Cols)+"x"+strconv.Itoa(ev.size.Rows)))
			case 'm':
				if ev.in {
					line = rec.inputMarker(ienc.flush(line, at), at, ev.n)
					break
				}
				pos += ev.n
				line = mark(rec.marker(enc.flush(line, at), at, ev.n), 0, at, true)
				lost += ev.n
			}
			if max := rec.r.cfg.MaxBytes; max > 0 && written+int64(len(line)) > max {
				cut(at)
				return
			}
			n, err := w.Write(line)
			written += int64(n)
			if err != nil {
				fail(fmt.Errorf("write %s: %w", rec.name, err))
				return
			}
		}
		if len(events) > 0 {
			continue // more may have come meanwhile; flush once it is quiet
		}
		if closed {
			line = mark(ienc.flush(enc.flush(line[:0], last), last), 0, last, false)
			if dropped > 0 {
				pos += dropped
				line = mark(rec.marker(line, last, dropped), 0, last, true)
				lost += dropped
			}
			_, err := w.Write(line)
			if err == nil {
				err = w.Flush()
			}
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				rec.stop()
				rec.log.Error("recording not completed", "err", fmt.Errorf("finish %s: %w", rec.name, err))
				return
			}
			rec.log.Info("recording closed", "bytes_written", written+int64(len(line)), "bytes_dropped", lost)
			return
		}
		if err := w.Flush(); err != nil {
			fail(fmt.Errorf("write %s: %w", rec.name, err))
			return
		}
		<-rec.wake
	}
}

// marker appends the event that says output is missing here, and logs it.
func (rec *Recording) marker(dst []byte, at time.Duration, n int64) []byte {
	rec.log.Warn("recording dropped output: the disk did not keep up", "bytes_dropped", n)
	return appendEvent(dst, at, 'm', []byte("termgate: "+strconv.FormatInt(n, 10)+" bytes of output dropped: the recording could not keep up"))
}

// inputMarker appends the event that says recorded input is missing here.
func (rec *Recording) inputMarker(dst []byte, at time.Duration, n int64) []byte {
	rec.log.Warn("recording dropped input: the disk did not keep up", "bytes_dropped", n)
	return appendEvent(dst, at, 'm', []byte("termgate: "+strconv.FormatInt(n, 10)+" bytes of input dropped: the recording could not keep up"))
}
