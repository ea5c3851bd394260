package record

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// opened is the file a recording writes.
type opened struct {
	f file
	// cont is what the file already holds when it is continued (nil: a
	// new file).
	cont *tail
	// file is its name in the instance's directory.
	file string
	// note, in a new file that continues SESSION.cast, says why.
	note string
}

// open creates the recording's file; for a held session it continues the
// session's existing file when it may (see appendTo), or a new
// SESSION.continued-N.cast when that file is not the gateway's to append to.
func (rec *Recording) open() (opened, error) {
	r := rec.r
	if !rec.held || r.cfg.appendTo == nil {
		f, err := r.cfg.create(rec.instance, rec.file)
		return opened{f: f, file: rec.file}, err
	}
	for try := 0; ; try++ {
		f, t, err := r.cfg.appendTo(rec.instance, rec.file)
		var refused *errRefused
		switch {
		case err == nil:
			rec.log.Info("recording continued: the session was adopted from its holder", "bytes_before", t.size)
			return opened{f: f, cont: &t, file: rec.file}, nil
		case errors.Is(err, errMissing):
			f, err := r.cfg.create(rec.instance, rec.file)
			if errors.Is(err, fs.ErrExist) && try == 0 {
				continue // another gateway created it meanwhile
			}
			return opened{f: f, file: rec.file}, err
		case errors.As(err, &refused):
			return rec.openContinued(refused)
		default:
			return opened{}, err
		}
	}
}

// openContinued continues the session's latest SESSION.continued-N.cast,
// or creates the next one, when SESSION.cast is not the gateway's to
// append to (why): one continuation file spans the restarts that follow.
func (rec *Recording) openContinued(why error) (opened, error) {
	session := strings.TrimSuffix(rec.file, ".cast")
	n := 1 // the first free number
	for n <= maxContinued && rec.r.exists(rec.instance, continuedName(session, n)) {
		n++
	}
	if n > 1 {
		name := continuedName(session, n-1)
		f, t, err := rec.r.cfg.appendTo(rec.instance, name)
		var refused *errRefused
		switch {
		case err == nil:
			rec.log.Info("recording continued in its continuation file", "reason", why.Error(), "continued_in", name, "bytes_before", t.size)
			return opened{f: f, cont: &t, file: name}, nil
		case !errors.As(err, &refused) && !errors.Is(err, errMissing):
			return opened{}, err
		}
	}
	for ; n <= maxContinued; n++ {
		name := continuedName(session, n)
		f, err := rec.r.cfg.create(rec.instance, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return opened{}, fmt.Errorf("%v; and its continuation: %w", why, err)
		}
		rec.log.Warn("recording continues in a new file: the session's existing recording is left as it is", "reason", why.Error(), "continued_in", name)
		return opened{f: f, file: name, note: "termgate: this recording continues " + rec.file + ", which was not appended to: " + why.Error()}, nil
	}
	return opened{}, fmt.Errorf("%v; and %d continuation files exist already: remove old ones", why, maxContinued)
}

// preamble starts a held session's part of the file: in a new file the
// byte number of its first output byte and the holder's replay; in a
// continued one the replay from the first byte the file lacks, or, when
// the replay no longer holds it, a marker saying how much output is lost.
// It returns the byte number of the next output byte (Output's first).
func (rec *Recording) preamble(dst []byte, o opened, enc *encoder, at time.Duration) ([]byte, int64) {
	replay := rec.replay
	end := rec.offset + int64(len(replay))
	t := o.cont
	if t != nil {
		// The window may have changed while no gateway recorded it.
		dst = appendEvent(dst, at, 'r', []byte(strconv.Itoa(rec.size.Cols)+"x"+strconv.Itoa(rec.size.Rows)))
	}
	switch {
	case t == nil:
		if o.note != "" {
			dst = appendEvent(dst, at, 'm', []byte(o.note))
		}
		dst = appendOffset(dst, at, rec.offset)
	case !t.known:
		rec.log.Warn("recording continued without knowing where it stopped: output may be missing or repeated")
		dst = appendEvent(dst, at, 'm', []byte("termgate: the recording continues after a gateway restart; where it had stopped is not known, so output may be missing or repeated here"))
		dst = appendOffset(dst, at, rec.offset)
	case t.next < rec.offset:
		n := rec.offset - t.next
		rec.log.Warn("recording has a gap: output printed while no gateway recorded the session is no longer buffered", "bytes_lost", n)
		dst = appendEvent(dst, at, 'm', []byte("termgate: "+strconv.FormatInt(n, 10)+
			" bytes of output lost: they were printed while no gateway recorded the session and are no longer buffered"))
		dst = appendOffset(dst, at, rec.offset)
	case t.next <= end:
		replay = replay[t.next-rec.offset:]
	default:
		rec.log.Warn("recording went past the session's output; continuing at the session's byte", "recorded_to", t.next, "session_at", end)
		dst = appendEvent(dst, at, 'm', []byte("termgate: the recording went up to output byte "+strconv.FormatInt(t.next, 10)+
			", past the session's byte "+strconv.FormatInt(end, 10)+"; continuing from there"))
		dst = appendOffset(dst, at, end)
		replay = nil
	}
	if len(replay) > 0 {
		dst = enc.output(dst, at, replay)
	}
	return dst, end
}

// appendOffset appends the byte-number marker (see scan.go).
func appendOffset(dst []byte, at time.Duration, n int64) []byte {
	return appendEvent(dst, at, 'm', []byte(offsetMarker+strconv.FormatInt(n, 10)))
}
