package termtest

import (
	"regexp"
	"testing"
	"time"
)

func TestWaitForSeesLaterWritesAndTimesOut(t *testing.T) {
	s := NewStream()
	go func() {
		s.Write([]byte("pid="))
		s.Write([]byte("42\r\n"))
	}()
	m, at := s.WaitFor(regexp.MustCompile(`pid=(\d+)\r`), 0, 5*time.Second)
	if m == nil || m[1] != "42" || at != 7 {
		t.Fatalf("WaitFor = %q, %d", m, at)
	}
	if m, at := s.WaitFor(regexp.MustCompile(`pid`), at, 10*time.Millisecond); m != nil || at != 7 {
		t.Fatalf("a match before from was found again: %q, %d", m, at)
	}
	if s.String() != "pid=42\r\n" {
		t.Fatalf("String = %q", s.String())
	}
}
