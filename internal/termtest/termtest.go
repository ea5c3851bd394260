// Package termtest holds helpers shared by the tests that drive terminals
// (the SSH listener's and the end-to-end tests) and by gatewayproc: an
// output sink a test can wait on for a pattern, a concurrency-safe buffer,
// an SSH command's result and exit status (ssh.go), a self-signed
// certificate (cert.go), playing a recording with asciinema (asciinema.go),
// and reading a sessions.Client as a blocking io.Reader (client.go).
package termtest

import (
	"bytes"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
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

// Len is how many bytes were written, without the copy Bytes makes.
func (s *Stream) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf)
}

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

// ExitStatus is the remote exit status in an x/crypto/ssh Session.Run or
// Wait error (0 for nil); any other error fails the test.
func ExitStatus(t testing.TB, err error) int {
	t.Helper()
	var ee *gossh.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitStatus()
	}
	t.Fatalf("no exit status: %v", err)
	return -1
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Reset empties the buffer.
func (b *SyncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}
