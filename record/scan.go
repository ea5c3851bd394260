package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A held session's recording says which byte of the session's output it
// has recorded up to, so that a gateway adopting the session after a
// restart continues the file exactly where the last one stopped. Players
// ignore markers ("m" events; `asciinema play` pauses on them only with
// --pause-on-markers), so the numbers are markers:
//
//	[0.000000, "m", "termgate: at output byte 4096"]
//
// says that the next output byte in the file is the session's byte 4096.
// Output events after it add their bytes (the file's text is the output's
// bytes as they were, as long as they were valid UTF-8); a recording writes
// such a marker when it starts and again after every event that does not
// say how many bytes it stood for (output with U+FFFD in it, which may
// replace an invalid byte, and the marker of dropped output).

// offsetMarker is the prefix of the byte-number marker.
const offsetMarker = "termgate: at output byte "

// cutMarker is the prefix of the marker a recording cut at
// --record-max-size ends with.
const cutMarker = "termgate: recording cut at "

// maxLine bounds one line of a recording being continued: a recording
// writes one chunk of output per line (a few KiB).
const maxLine = 16 << 20

// maxEventTime bounds the times in a recording being continued, so that
// they convert to a time.Duration: about 127 years.
const maxEventTime = 4e9

// tail is what a gateway continuing a recording needs to know of it.
type tail struct {
	header Header
	// last is the latest event's time.
	last time.Duration
	// known: next is the session's number of the first output byte the
	// file does not have. Not known for a file without byte-number
	// markers (written before they existed) or whose last output after
	// the last marker holds a U+FFFD.
	known bool
	next  int64
	// cut: the file ends with the marker of --record-max-size.
	cut bool
	// size is the file's length in bytes.
	size int64
}

// errNotRecording: the file is not a complete asciicast v2 recording
// (an unfinished last line, say): it is not appended to.
var errNotRecording = errors.New("not a complete asciicast v2 recording")

// scan reads an existing recording (untrusted: anyone who could write the
// file may have put anything in it) strictly, as Read does, without keeping
// its events. now bounds the header's timestamp.
func scan(r io.Reader, now time.Time) (tail, error) {
	var t tail
	br := bufio.NewReaderSize(r, 64<<10)
	line, err := readLine(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return t, fmt.Errorf("%w: empty, no header line", errNotRecording)
		}
		return t, fmt.Errorf("line 1 (header): %w", err)
	}
	t.size = int64(len(line))
	if err := json.Unmarshal(line, &t.header); err != nil {
		return t, fmt.Errorf("%w: line 1 (header): %v", errNotRecording, err)
	}
	h := t.header
	if h.Version != 2 || h.Width <= 0 || h.Height <= 0 {
		return t, fmt.Errorf("%w: line 1 (header): version %d, size %dx%d", errNotRecording, h.Version, h.Width, h.Height)
	}
	if h.Timestamp <= 0 || h.Timestamp > now.Add(24*time.Hour).Unix() {
		return t, fmt.Errorf("%w: line 1 (header): timestamp %d is not a time before now", errNotRecording, h.Timestamp)
	}
	last := 0.0
	dirty := false // output with U+FFFD since the last byte-number marker
	for n := 2; ; n++ {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return t, fmt.Errorf("line %d: %w", n, err)
		}
		t.size += int64(len(line))
		ev, err := parseEvent(line)
		if err != nil {
			return t, fmt.Errorf("%w: line %d: %v", errNotRecording, n, err)
		}
		if ev.Time < last || ev.Time > maxEventTime {
			return t, fmt.Errorf("%w: line %d: time %v after %v", errNotRecording, n, ev.Time, last)
		}
		last = ev.Time
		switch ev.Type {
		case "o":
			if strings.ContainsRune(ev.Data, utf8.RuneError) {
				dirty = true
			}
			if t.next > math.MaxInt64-int64(len(ev.Data)) {
				dirty = true
				break
			}
			t.next += int64(len(ev.Data))
		case "m":
			if rest, ok := strings.CutPrefix(ev.Data, offsetMarker); ok {
				v, err := strconv.ParseInt(rest, 10, 64)
				if err != nil || v < 0 {
					return t, fmt.Errorf("%w: line %d: byte-number marker %q", errNotRecording, n, ev.Data)
				}
				t.known, t.next, dirty = true, v, false
			}
			t.cut = t.cut || strings.HasPrefix(ev.Data, cutMarker)
		}
	}
	t.known = t.known && !dirty
	t.last = time.Duration(last * float64(time.Second))
	return t, nil
}

// readLine returns the next line with its newline; io.EOF at the end, and
// an error for a last line without a newline (a write cut short) or one
// longer than maxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			return nil, fmt.Errorf("%w: a line longer than %d bytes", errNotRecording, maxLine)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("%w: the last line is not complete (no newline)", errNotRecording)
		default:
			return nil, err
		}
	}
}

// parseEvent parses one event line as Read does.
func parseEvent(line []byte) (Event, error) {
	var ev Event
	if !utf8.Valid(line) {
		return ev, errors.New("not UTF-8")
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(bytes.TrimSuffix(line, []byte("\n")), &raw); err != nil {
		return ev, err
	}
	if len(raw) != 3 {
		return ev, fmt.Errorf("%d elements, want [time, type, data]", len(raw))
	}
	if err := json.Unmarshal(raw[0], &ev.Time); err != nil {
		return ev, fmt.Errorf("time: %w", err)
	}
	if err := json.Unmarshal(raw[1], &ev.Type); err != nil {
		return ev, fmt.Errorf("type: %w", err)
	}
	if err := json.Unmarshal(raw[2], &ev.Data); err != nil {
		return ev, fmt.Errorf("data: %w", err)
	}
	if math.IsNaN(ev.Time) || math.IsInf(ev.Time, 0) || ev.Time < 0 {
		return ev, fmt.Errorf("time %v", ev.Time)
	}
	return ev, nil
}
