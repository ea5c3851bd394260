package screen

import (
	"bytes"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/termgate/termgate/internal/ring"
	"github.com/termgate/termgate/screen/sanitize"
	"github.com/termgate/termgate/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// session stands in for sessions.Session: it writes to the ring and the
// replayer in order, as the session does under its lock.
type session struct {
	ring    *ring.Buffer
	r       *Replayer
	answers chan []byte
}

func newSession(t *testing.T, o Options) *session {
	s := &session{ring: ring.New(16 << 10), answers: make(chan []byte, 16)}
	s.r = NewReplayerFunc(o)(s.ring, func(p []byte) { s.answers <- p }).(*Replayer)
	s.r.Resize(sessions.Size{Cols: 40, Rows: 10})
	t.Cleanup(s.r.Close)
	return s
}

func (s *session) out(p string) {
	s.ring.Write([]byte(p))
	s.r.Write([]byte(p))
}

func snapshotOf(out string, scrollback int) []byte {
	t := New(40, 10, scrollback)
	t.Write([]byte(out))
	return t.Snapshot()
}

// The snapshot covers every byte written before Replay, however far the
// emulator's goroutine got.
func TestReplayerCatchesUp(t *testing.T) {
	s := newSession(t, Options{})
	var all string
	for i := range 200 {
		p := "\x1b[?1049h\x1b[32mline " + string(rune('a'+i%26)) + "\r\n"
		if i == 100 {
			p = "\x1b[?1049l\x1b[?2004h"
		}
		all += p
		s.out(p)
	}
	if got, want := s.r.Replay(), snapshotOf(all, 128<<10); !bytes.Equal(got, want) {
		t.Fatalf("snapshot\n%q\nwant\n%q", got, want)
	}
}

// An emulator that fell behind by more than the queue is rebuilt from the
// ring: the snapshot shows the ring's output, not a stale screen.
func TestReplayerRebuildsFromRingAfterOverflow(t *testing.T) {
	s := newSession(t, Options{Queue: 1 << 10})
	s.r.emuMu.Lock() // the emulator is busy: the queue fills up
	var all string
	for i := range 300 {
		p := "output line " + string(rune('a'+i%26)) + "\r\n"
		all += p
		s.out(p)
	}
	s.r.mu.Lock()
	overflow := s.r.overflow
	s.r.mu.Unlock()
	s.r.emuMu.Unlock()
	if !overflow {
		t.Fatal("4 KiB of output behind a 1 KiB queue did not overflow")
	}
	want := New(40, 10, 128<<10)
	want.Write(sanitize.Replay(s.ring.Bytes(), s.ring.Start() > 0))
	if got := s.r.Replay(); !bytes.Equal(got, want.Snapshot()) {
		t.Fatalf("snapshot after overflow\n%q\nwant the ring's\n%q", got, want.Snapshot())
	}
	// Later output is followed again.
	s.out("\x1b[2J\x1b[Hafter")
	if got := s.r.Replay(); !bytes.Contains(got, []byte("after")) {
		t.Fatalf("output after the rebuild is missing from %q", got)
	}
}

// Queries are answered by the emulator only while no client is attached.
func TestReplayerAnswersOnlyWhileDetached(t *testing.T) {
	s := newSession(t, Options{})
	s.r.Attached(1)
	s.out("abc\x1b[6n")
	s.r.Attached(0)
	s.out("\x1b[6n\x1b[c")
	for _, want := range []string{"\x1b[1;4R", "\x1b[?62;22c"} {
		select {
		case got := <-s.answers:
			if string(got) != want {
				t.Fatalf("answer %q, want %q (the query asked while attached must get none)", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer %q within 5s", want)
		}
	}
	select {
	case got := <-s.answers:
		t.Fatalf("unexpected answer %q", got)
	case <-time.After(100 * time.Millisecond):
	}
}

// A panic in the emulator (a bug) does not take the gateway down: the
// replayer falls back to the raw replay.
func TestReplayerFallsBackToRawOnPanic(t *testing.T) {
	s := newSession(t, Options{})
	s.out("before\r\n")
	s.r.Replay()
	s.r.emuMu.Lock()
	s.r.term.Reply = func([]byte) { panic("emulator bug") }
	s.r.emuMu.Unlock()
	s.out("\x1b[6nafter\r\n")
	if got, want := s.r.Replay(), sanitize.Replay(s.ring.Bytes(), false); !bytes.Equal(got, want) {
		t.Fatalf("replay after a panic %q, want the raw replay %q", got, want)
	}
}

// fedColumn reports how much of one line of printable output the emulator
// has parsed: the cursor's column.
func (s *session) fedColumn() int {
	s.r.emuMu.Lock()
	defer s.r.emuMu.Unlock()
	return s.r.term.x
}

// While a client is attached, output reaches the emulator in batches, not
// a wake-up per chunk (which put the emulator beside the client's writer
// on every echo); a snapshot still covers every byte written before it.
func TestReplayerFeedsLazilyWhileAttached(t *testing.T) {
	s := newSession(t, Options{Lazy: time.Hour})
	s.r.Attached(1)
	s.out("abc")
	time.Sleep(50 * time.Millisecond) // time enough for an eager worker
	if x := s.fedColumn(); x != 0 {
		t.Fatalf("the emulator parsed a chunk at once (cursor at column %d) while a client was attached", x)
	}
	if got, want := s.r.Replay(), snapshotOf("abc", 128<<10); !bytes.Equal(got, want) {
		t.Fatalf("snapshot %q, want %q (the unparsed output must be fed first)", got, want)
	}
}

// The timer feeds what waits, so a snapshot has little left to parse.
func TestReplayerFeedsAfterLazyDelay(t *testing.T) {
	s := newSession(t, Options{Lazy: 10 * time.Millisecond})
	s.r.Attached(1)
	s.out("abcd")
	deadline := time.Now().Add(5 * time.Second)
	for s.fedColumn() != 4 {
		if time.Now().After(deadline) {
			t.Fatal("the queued output was not fed within 5s of the lazy delay")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A full batch is fed without waiting for the timer, so a busy stream
// never piles up to the queue's bound (which would lose the emulator's
// state before the ring).
func TestReplayerFeedsFullBatchAtOnce(t *testing.T) {
	s := newSession(t, Options{Lazy: time.Hour, Batch: 8})
	s.r.Attached(1)
	s.out("0123456789")
	deadline := time.Now().Add(5 * time.Second)
	for s.fedColumn() != 10 {
		if time.Now().After(deadline) {
			t.Fatal("a full batch was not fed within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
