// Package termtest holds helpers shared by the tests that drive terminals
// (the SSH listener's and the end-to-end tests): an output sink a test can
// wait on for a pattern.
package termtest

import (
	"regexp"
	"sync"
	"time"
)

// Stream accumulates output and lets a test wait for a pattern in it.
type Stream struct {
	mu      sync.Mutex // guards buf and changed
	buf     []byte
	changed chan struct{} // closed and replaced on every write
}

// NewStream returns an empty Stream.
func NewStream() *Stream { return &Stream{changed: make(chan struct{})} }

// Write appends p and wakes the waiters.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// Bytes returns a copy of everything written.
func (s *Stream) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.buf...)
}

func (s *Stream) String() string { return string(s.Bytes()) }

// WaitFor waits, at most timeout, until re matches the stream from offset
// from on; it returns the submatches and the offset just after the match,
// or nil and from.
func (s *Stream) WaitFor(re *regexp.Regexp, from int, timeout time.Duration) ([]string, int) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		loc := re.FindSubmatchIndex(s.buf[from:])
		var m []string
		for i := 0; loc != nil && i < len(loc); i += 2 {
			if loc[i] < 0 {
				m = append(m, "")
				continue
			}
			m = append(m, string(s.buf[from+loc[i]:from+loc[i+1]]))
		}
		changed := s.changed
		s.mu.Unlock()
		if loc != nil {
			return m, from + loc[1]
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, from
		}
	}
}
