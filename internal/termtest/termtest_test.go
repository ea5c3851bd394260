package termtest

import (
	"flag"
	"regexp"
	"runtime"
	"strconv"
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

func TestUntilWaitsForTheConditionOrTheDeadline(t *testing.T) {
	n := 0
	if !Until(5*time.Second, time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Until returned before the condition held, or polled on (%d polls)", n)
	}
	start := time.Now()
	if Until(20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("Until reported a condition that never held")
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("Until gave up after %s, before its deadline", took)
	}
}

func TestParallelAtLeastRaisesTheDefaultOnly(t *testing.T) {
	f := flag.Lookup("test.parallel")
	if f == nil {
		t.Fatal("no -test.parallel flag")
	}
	was := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(was) })
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	want := was
	if n, _ := strconv.Atoi(was); !set && n < 1000 && runtime.GOMAXPROCS(0) < 1000 {
		want = "1000"
	}
	ParallelAtLeast(1000)
	if got := f.Value.String(); got != want {
		t.Errorf("-test.parallel %s after ParallelAtLeast(1000), want %s (set on the command line: %v)", got, want, set)
	}
}
