package record

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// A recording's goroutine (run) writes its file: it opens or continues it
// (begin), turns each queued event into its line with the markers that say
// what is missing (event, mark, dropped) and ends the file on Close
// (finish), at Config.MaxBytes (cut) or on a write error (fail). Only that
// goroutine touches a castFile.

// castFile is the file a recording's goroutine writes, and where it is in
// it.
type castFile struct {
	rec     *Recording
	f       file
	file    string // its name in its instance's directory
	w       *bufio.Writer
	enc     encoder // output
	ienc    encoder // input
	line    []byte  // the line being made (reused)
	written int64   // bytes in the file, with what w holds
	lost    int64   // output bytes dropped, for the closing log
	// Times in the file: a continued file's are seconds since its
	// header's timestamp and never go below its last event's.
	shift, floor time.Duration
	last         time.Duration // the latest event's time in the file
	// pos is the session's number of the next output byte given to enc
	// (held sessions: see the byte-number markers in scan.go).
	pos int64
}

// run creates (or, for a held session, continues) the file and drains the
// queue into it until Close.
func (rec *Recording) run() {
	defer rec.r.ended(rec)
	if rec.prev != nil {
		<-rec.prev
	}
	if cf := rec.begin(); cf != nil {
		cf.drain()
	}
}

// begin opens the file, or continues a held session's, and writes its
// start: a new file's header, a held session's preamble. It returns nil,
// with the recording stopped and the reason logged, when there is no file
// to write.
func (rec *Recording) begin() *castFile {
	o, err := rec.open()
	if err != nil {
		rec.stop()
		switch {
		case errors.Is(err, errLocked):
			rec.log.Info("session not recorded by this gateway", "err", err)
		default:
			rec.log.Error("session not recorded", "err", err)
		}
		return nil
	}
	if o.file != rec.file {
		rec.log = rec.log.With("recording", filepath.Join(rec.instance, o.file))
	}
	cf := &castFile{rec: rec, f: o.f, file: o.file, w: bufio.NewWriterSize(o.f, 64<<10), ienc: encoder{input: true}}
	if t := o.cont; t != nil {
		cf.shift = rec.start.Sub(time.Unix(t.header.Timestamp, 0))
		cf.floor = t.last
		cf.written = t.size
	} else {
		if _, err := cf.w.Write(rec.header); err != nil {
			cf.fail(fmt.Errorf("write %s: %w", rec.name, err))
			return nil
		}
		cf.written = int64(len(rec.header))
	}
	cf.last = cf.stamp(0)
	if rec.held {
		cf.line, cf.pos = rec.preamble(cf.line[:0], o, &cf.enc, cf.last)
		cf.line = cf.mark(cf.line, cf.last, false)
		if !cf.write(cf.line) {
			return nil
		}
	}
	return cf
}

// drain writes the queued events until Close, flushing whenever the queue
// is empty.
func (cf *castFile) drain() {
	rec := cf.rec
	for {
		events, closed, dropped := rec.take()
		for _, ev := range events {
			if ev.kind == 'n' && !cf.moved(string(ev.data)) {
				return
			}
			at := cf.stamp(ev.at)
			cf.last = at
			cf.line = cf.event(cf.line[:0], ev, at)
			if rec.overBudget(cf.written, len(cf.line)) {
				cf.cut(at)
				return
			}
			if !cf.write(cf.line) {
				return
			}
		}
		if len(events) > 0 {
			continue // more may have come meanwhile; flush once it is quiet
		}
		if closed {
			cf.finish(dropped)
			return
		}
		if err := cf.w.Flush(); err != nil {
			cf.fail(fmt.Errorf("write %s: %w", rec.name, err))
			return
		}
		<-rec.wake
	}
}

// event appends ev's line, with the markers it needs, at time at.
func (cf *castFile) event(dst []byte, ev event, at time.Duration) []byte {
	switch ev.kind {
	case 'o':
		cf.pos += int64(len(ev.data))
		return cf.mark(cf.enc.output(dst, at, ev.data), at, false)
	case 'i':
		return cf.ienc.output(dst, at, ev.data)
	case 'r':
		return appendEvent(dst, at, 'r', []byte(strconv.Itoa(ev.size.Cols)+"x"+strconv.Itoa(ev.size.Rows)))
	case 'm':
		if ev.in {
			return cf.rec.inputMarker(cf.ienc.flush(dst, at), at, ev.n)
		}
		return cf.dropped(dst, at, ev.n)
	}
	return dst
}

// stamp turns a time since the recording's start into the file's time.
func (cf *castFile) stamp(at time.Duration) time.Duration {
	if at += cf.shift; at < cf.floor {
		at = cf.floor
	}
	return at
}

// mark appends the byte-number marker when the line just made does not
// say how many output bytes it stood for.
func (cf *castFile) mark(dst []byte, at time.Duration, always bool) []byte {
	if cf.rec.held && (always || bytes.Contains(dst, []byte("\ufffd"))) {
		dst = appendOffset(dst, at, cf.pos-int64(len(cf.enc.carry)))
	}
	return dst
}

// dropped appends, after what enc carries, the marker saying that n bytes
// of output are missing here.
func (cf *castFile) dropped(dst []byte, at time.Duration, n int64) []byte {
	cf.pos += n
	cf.lost += n
	return cf.mark(cf.rec.marker(cf.enc.flush(dst, at), at, n), at, true)
}

// write adds line to the file; on an error the recording stops.
func (cf *castFile) write(line []byte) bool {
	n, err := cf.w.Write(line)
	cf.written += int64(n)
	if err != nil {
		cf.fail(fmt.Errorf("write %s: %w", cf.rec.name, err))
		return false
	}
	return true
}

// fail stops the recording after a write error; the session goes on.
func (cf *castFile) fail(err error) {
	cf.rec.stop()
	_ = cf.f.Close()
	cf.rec.log.Error("recording stopped: the session goes on unrecorded", "err", err, "bytes_written", cf.written)
}

// finish ends the file on Close: what the encoders carry, the marker of
// output dropped at the very end, then flush, sync and close.
func (cf *castFile) finish(dropped int64) {
	rec := cf.rec
	line := cf.mark(cf.ienc.flush(cf.enc.flush(cf.line[:0], cf.last), cf.last), cf.last, false)
	if dropped > 0 {
		line = cf.dropped(line, cf.last, dropped)
	}
	if err := cf.end(line); err != nil {
		rec.stop()
		rec.log.Error("recording not completed", "err", fmt.Errorf("finish %s: %w", rec.name, err))
		return
	}
	rec.log.Info("recording closed", "bytes_written", cf.written+int64(len(line)), "bytes_dropped", cf.lost)
}

// cut ends a recording that reached Config.MaxBytes or Config.MaxTotal
// (rec.cutBy says which) with a marker saying so (the one line allowed
// past the limit).
func (cf *castFile) cut(at time.Duration) {
	rec := cf.rec
	rec.stop()
	line := appendEvent(nil, at, 'm', []byte(cutMarker+strconv.FormatInt(cf.written, 10)+
		" bytes ("+rec.cutBy+"); the session went on unrecorded"))
	if err := cf.end(line); err != nil {
		rec.log.Error("recording not completed", "err", fmt.Errorf("finish %s: %w", rec.name, err))
		return
	}
	rec.log.Warn("recording cut: it reached its limit; the session goes on unrecorded", "limit", rec.cutBy, "bytes_written", cf.written+int64(len(line)))
}

// end writes the last line, flushes, syncs and closes the file.
func (cf *castFile) end(line []byte) error {
	_, err := cf.w.Write(line)
	if err == nil {
		err = cf.w.Flush()
	}
	if err == nil {
		err = cf.f.Sync()
	}
	if cerr := cf.f.Close(); err == nil {
		err = cerr
	}
	return err
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
