package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// osc133 is one OSC 133 mark as bash's shell integration prints it.
func osc133(p string) string { return "\x1b]133;" + p + "\x07" }

// shellRun is what a marked shell prints for one command: the prompt,
// the echoed command line, its output and the finished mark.
func shellRun(cmd, output string, exit int) string {
	return osc133("A") + "$ " + osc133("B") + cmd + "\r\n" + osc133("C") + output + osc133(fmt.Sprintf("D;%d", exit))
}

// sessionOf is the instance's running session, for tests that look inside.
func sessionOfT(t *testing.T, r *Registry, name string) *Session {
	t.Helper()
	s, err := r.sessionOf(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A person who comes back gets, after the screen, how long they were gone,
// how much output went by and the commands that finished meanwhile with
// their exit statuses; someone who never left, or still has a client
// attached, gets none.
func TestAwaySummaryAfterTheReplay(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock, IdleTimeout: 24 * time.Hour})
	ann := attach(t, r, "web1", AttachOptions{Who: "ann"})
	bob := attach(t, r, "web1", AttachOptions{Who: "bob"})
	defer bob.Detach()
	p := fb.last()
	p.emit("hello\r\n")
	if _, err := readAtLeast(t, bob, len("hello\r\n")); err != nil {
		t.Fatal(err)
	}
	ann.Detach()

	clock.Advance(12 * time.Minute)
	out := shellRun("make", "ok\r\n", 0) + shellRun("make test", "FAIL\r\n", 2)
	p.emit(out)
	if got, err := readAtLeast(t, bob, len(out)); err != nil || string(got) != out {
		t.Fatalf("bob read %q, %v", got, err)
	}

	back := attach(t, r, "web1", AttachOptions{Who: "ann"})
	defer back.Detach()
	replay, away := readEvent[*Away](t, back)
	if !strings.Contains(string(replay), "FAIL") {
		t.Errorf("the away event came before the replay: replay %q", replay)
	}
	if away.Gone != 12*time.Minute || away.Bytes != int64(len(out)) || !away.Marked || away.Finished != 2 {
		t.Errorf("away = %+v, want 12m, %d bytes, marked, 2 finished", away, len(out))
	}
	want := fmt.Sprintf("away 12m: %d B of output, 2 commands finished: make (exit 0), make test (exit 2)", len(out))
	if away.String() != want {
		t.Errorf("summary\n %q\nwant\n %q", away.String(), want)
	}
	if back.Cause() != nil {
		t.Fatalf("the away event closed the client: %v", back.Cause())
	}

	// ann has a client attached again: a second one gets no summary, nor
	// does carol, who never left.
	for _, who := range []string{"ann", "carol"} {
		c := attach(t, r, "web1", AttachOptions{Who: who})
		p.emit("x")
		if _, err := readAtLeast(t, c, 1+len("hello\r\n")+len(out)); err != nil {
			t.Errorf("%s's attach: %v, want no event", who, err)
		}
		c.Detach()
	}
}

// Without OSC 133 the summary says only how long and how much; a return
// within seconds says nothing (a reconnect after a network blip), output
// or not, unless a command finished.
func TestAwayWithoutMarksAndQuietReturn(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock, IdleTimeout: 24 * time.Hour})
	ann := attach(t, r, "web1", AttachOptions{Who: "ann"})
	ann.Detach()
	s := sessionOfT(t, r, "web1")
	p := fb.last()
	p.emit("y")
	waitFor(t, func() bool { return s.bytesOut.Load() == 1 })
	clock.Advance(4 * time.Second)
	quick := attach(t, r, "web1", AttachOptions{Who: "ann"})
	p.emit("z")
	if b, err := readAtLeast(t, quick, 2); err != nil || string(b) != "yz" {
		t.Fatalf("a quick return read %q, %v; want the replay, the output and no event", b, err)
	}
	quick.Detach()
	p.emit(shellRun("true", "", 0))
	waitFor(t, func() bool { s.away.mu.Lock(); defer s.away.mu.Unlock(); return s.away.marks.total == 1 })
	clock.Advance(time.Second)
	quick = attach(t, r, "web1", AttachOptions{Who: "ann"})
	if _, ev, err := readUntil(t, quick, 1<<30); !strings.HasSuffix(fmt.Sprint(ev), "1 command finished: true (exit 0)") {
		t.Fatalf("a quick return after a command finished: %v, %v; want the summary", ev, err)
	}
	quick.Detach()
	s.away.mu.Lock()
	s.away.marks = marks{} // the rest is about a shell without marks
	s.away.mu.Unlock()

	clock.Advance(3 * time.Hour)
	big := strings.Repeat("z", 3400)
	p.emit(big)
	waitFor(t, func() bool { return s.bytesOut.Load() == int64(2+len(shellRun("true", "", 0))+len(big)) })
	back := attach(t, r, "web1", AttachOptions{Who: "ann"})
	defer back.Detach()
	if _, away := readEvent[*Away](t, back); away.String() != "away 3h: 3.4 KB of output" {
		t.Fatalf("got %v, want the summary \"away 3h: 3.4 KB of output\"", away)
	}
}

// A reset is a new session: it remembers nobody.
func TestAwayForgottenOnReset(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock, IdleTimeout: 24 * time.Hour})
	attach(t, r, "web1", AttachOptions{Who: "ann"}).Detach()
	fb.last().emit("before")
	waitFor(t, func() bool { return sessionOfT(t, r, "web1").bytesOut.Load() == 6 })
	clock.Advance(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.Reset(ctx, "web1", "admin"); err != nil {
		t.Fatal(err)
	}
	c := attach(t, r, "web1", AttachOptions{Who: "ann"})
	fb.last().emit("after")
	if b, err := readAtLeast(t, c, 5); err != nil {
		t.Fatalf("after a reset: read %q, %v; want no away event", b, err)
	}
	if _, err := r.Since(ctx, "web1", "ann"); !errors.Is(err, ErrNeverLeft) {
		t.Errorf("Since after the reset: %v, want ErrNeverLeft", err)
	}
	c.Detach()
}

// The book is bounded: a hundred people who came and went leave the 64
// most recent.
func TestAwayRemembersAtMost64People(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, _ := newTestRegistry(t, Config{Clock: clock, IdleTimeout: 24 * time.Hour})
	for i := range 100 {
		attach(t, r, "web1", AttachOptions{Who: fmt.Sprintf("p%d", i)}).Detach()
		clock.Advance(time.Second)
	}
	s := sessionOfT(t, r, "web1")
	s.away.mu.Lock()
	n := len(s.away.left)
	_, first := s.away.left["p0"]
	_, last := s.away.left["p99"]
	_, kept := s.away.left["p36"]
	_, evicted := s.away.left["p35"]
	s.away.mu.Unlock()
	if n != awayPeople || first || !last || !kept || evicted {
		t.Fatalf("%d people kept (p0 %v, p35 %v, p36 %v, p99 %v); want the 64 most recent", n, first, evicted, kept, last)
	}
}

// Since returns the output after the person left, without terminal
// queries, and says how much the buffer no longer holds.
func TestSinceLastDetach(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock, IdleTimeout: 24 * time.Hour, BufferSize: MinBufferSize})
	ann := attach(t, r, "web1", AttachOptions{Who: "ann"})
	p := fb.last()
	p.emit("before\r\n")
	if _, err := readAtLeast(t, ann, 8); err != nil {
		t.Fatal(err)
	}
	ann.Detach()
	s := sessionOfT(t, r, "web1")
	p.emit("after\x1b[6n\r\n")
	waitFor(t, func() bool { return s.bytesOut.Load() == 8+11 })
	ctx := context.Background()
	l, err := r.Since(ctx, "web1", "ann")
	if err != nil || string(l.Output) != "after\r\n" || l.Missing != 0 {
		t.Fatalf("Since = %q missing %d, %v; want \"after\\r\\n\" (the query dropped)", l.Output, l.Missing, err)
	}
	if _, err := r.Since(ctx, "web1", "bob"); !errors.Is(err, ErrNeverLeft) {
		t.Errorf("Since for someone who never left: %v, want ErrNeverLeft", err)
	}

	flood := strings.Repeat("line of output\r\n", 2*MinBufferSize/16)
	p.emit(flood)
	waitFor(t, func() bool { return s.bytesOut.Load() == int64(19+len(flood)) })
	l, err = r.Since(ctx, "web1", "ann")
	if err != nil || l.Missing <= 0 || len(l.Output) > MinBufferSize || !strings.HasPrefix(string(l.Output), "line of output") {
		t.Fatalf("after the ring wrapped: missing %d, %d bytes starting %.20q, %v; want a count and whole lines", l.Missing, len(l.Output), l.Output, err)
	}
}

// A shell that floods marks while someone is away: the summary stays
// bounded (the last 32 commands, the count of all) and so does the state.
func TestAwayAfterAFloodOfMarks(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock, IdleTimeout: 24 * time.Hour})
	attach(t, r, "web1", AttachOptions{Who: "ann"}).Detach()
	s := sessionOfT(t, r, "web1")
	p := fb.last()
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "\x1b]133;B\x07cmd %d\x1b]133;C\x07\x1b]133;D;%d\x07\x1b]133;%s\x07", i, i%256, strings.Repeat("x", 100))
	}
	flood := b.String()
	p.emit(flood)
	waitFor(t, func() bool { return s.bytesOut.Load() == int64(len(flood)) })
	clock.Advance(time.Minute)
	back := attach(t, r, "web1", AttachOptions{Who: "ann"})
	defer back.Detach()
	_, away := readEvent[*Away](t, back)
	if away.Finished != 20000 || len(away.Commands) != keptCommands ||
		away.Commands[len(away.Commands)-1].Command != "cmd 19999" || away.Commands[0].Command != "cmd 19968" {
		t.Fatalf("after 20000 commands: %v", away)
	}
	if line := away.String(); len(line) > 300 || !strings.Contains(line, "20000 commands finished, the last 5: cmd 19995 (exit 27)") {
		t.Errorf("summary %q: want it short, naming the last 5", line)
	}
}

// The one-line summary names at most 5 commands, each cut to 60
// characters; the event keeps them whole.
func TestAwayLineStaysShort(t *testing.T) {
	long := strings.Repeat("é", 150)
	a := &Away{Gone: 90 * time.Minute, Bytes: 3_400_000, Marked: true, Finished: 1,
		Commands: []FinishedCommand{{Command: long, Exit: 1, ExitKnown: true}}}
	want := "away 1h30m: 3.4 MB of output, 1 command finished: " + strings.Repeat("é", 59) + "… (exit 1)"
	if got := a.String(); got != want {
		t.Errorf("summary %q\nwant %q", got, want)
	}
	a.Commands = append(a.Commands, FinishedCommand{})
	a.Finished = 2
	if got := a.String(); got != "away 1h30m: 3.4 MB of output, 2 commands finished (exit 1, ?)" {
		t.Errorf("without every command's text: %q", got)
	}
}

func TestAwayBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 KB", 3400: "3.4 KB", 999_949: "999.9 KB",
		999_960: "1.0 MB", 3_400_000: "3.4 MB", 999_960_000: "1.0 GB", 5e12: "5000.0 GB"} {
		if got := awayBytes(n); got != want {
			t.Errorf("awayBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// The pump follows the marks outside the session's lock, but whoever reads
// the away book under it (an attach's summary, a detach's mark) finds them
// fed up to the ring's end: the commands it counts are the ones in the
// output it sees.
func TestAwayMarksKeepUpWithTheRing(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	attach(t, r, "web1", AttachOptions{}).Detach()
	s := sessionOfT(t, r, "web1")
	p := fb.last()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 300 { // 300 × 33 bytes: the ring keeps them all
			p.emit(shellRun("true", "", 0))
		}
	}()
	check := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.away.mu.Lock()
		defer s.away.mu.Unlock()
		if in, fed := strings.Count(string(s.ring.Bytes()), osc133("D;0")), s.away.marks.total; uint64(in) != fed {
			t.Fatalf("the ring holds %d finished commands, the marks count %d", in, fed)
		}
	}
	for {
		select {
		case <-done:
			check()
			return
		default:
			check()
		}
	}
}
