package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"
)

// Header is an asciicast v2 header line.
type Header struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp"`
	Env       map[string]string `json:"env,omitempty"`
	Title     string            `json:"title,omitempty"`
}

// Event is one asciicast v2 event line: Time in seconds, Type "o"
// (output), "r" (resize, Data "COLSxROWS"), "m" (marker) or "i" (input).
type Event struct {
	Time float64
	Type string
	Data string
}

// Read parses an asciicast v2 file strictly: a version 2 header with a
// positive size, then events of three elements whose times are finite,
// not negative and never decrease, every line valid UTF-8. Tests and tools read recordings with it.
func Read(r io.Reader) (Header, []Event, error) {
	var h Header
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return h, nil, err
		}
		return h, nil, errors.New("empty recording: no header line")
	}
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return h, nil, fmt.Errorf("line 1 (header): %w", err)
	}
	if h.Version != 2 || h.Width <= 0 || h.Height <= 0 {
		return h, nil, fmt.Errorf("line 1 (header): version %d, size %dx%d: want version 2 and a positive size", h.Version, h.Width, h.Height)
	}
	var events []Event
	last := 0.0
	for n := 2; sc.Scan(); n++ {
		if !utf8.Valid(sc.Bytes()) {
			return h, events, fmt.Errorf("line %d: not UTF-8 (asciicast is JSON text)", n)
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			return h, events, fmt.Errorf("line %d: %w", n, err)
		}
		if len(raw) != 3 {
			return h, events, fmt.Errorf("line %d: %d elements, want [time, type, data]", n, len(raw))
		}
		var ev Event
		if err := json.Unmarshal(raw[0], &ev.Time); err != nil {
			return h, events, fmt.Errorf("line %d: time: %w", n, err)
		}
		if err := json.Unmarshal(raw[1], &ev.Type); err != nil {
			return h, events, fmt.Errorf("line %d: type: %w", n, err)
		}
		if err := json.Unmarshal(raw[2], &ev.Data); err != nil {
			return h, events, fmt.Errorf("line %d: data: %w", n, err)
		}
		if math.IsNaN(ev.Time) || math.IsInf(ev.Time, 0) || ev.Time < last {
			return h, events, fmt.Errorf("line %d: time %v after %v: times must not decrease", n, ev.Time, last)
		}
		last = ev.Time
		events = append(events, ev)
	}
	return h, events, sc.Err()
}
