package record

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// markers returns the data of the file's "m" events.
func markers(evs []Event) []string {
	var m []string
	for _, ev := range evs {
		if ev.Type == "m" {
			m = append(m, ev.Data)
		}
	}
	return m
}

func castFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "web1"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A durable session adopted by a restarted gateway goes on in the same
// recording: what it printed before the first gateway connected, while
// that gateway ran, while no gateway ran (from the holder's replay) and
// after the restart is all in the one file, once, with times that never
// go back, and asciinema plays it. (Before, the restarted gateway refused
// the existing file and the session went on unrecorded.)
func TestAdoptedSessionContinuesItsRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs := &termtest.SyncBuffer{}
	b := newHeldBackend("0123abcd", 1<<20)
	b.print("$ echo one\r\none\r\n")

	g1 := startGateway(t, b, dir, logs)
	b.print("$ echo café\r\ncafé\r\n")
	g1.stop()
	path := filepath.Join(dir, "web1", "0123abcd.cast")
	_, evs := readCast(t, path)
	firstLast := evs[len(evs)-1].Time

	b.print("printed while no gateway ran\r\n")
	time.Sleep(10 * time.Millisecond)
	g2 := startGateway(t, b, dir, logs)
	b.print("$ after the restart\r\n")
	g2.stop()
	g3 := startGateway(t, b, dir, logs) // nothing new: nothing repeated
	g3.stop()

	want := "$ echo one\r\none\r\n$ echo café\r\ncafé\r\nprinted while no gateway ran\r\n$ after the restart\r\n"
	h, evs := readCast(t, path) // Read refuses decreasing times
	if got := outputOf(evs); got != want {
		t.Fatalf("recorded output %q, want %q\n%s", got, want, logs.String())
	}
	if files := castFiles(t, dir); len(files) != 1 {
		t.Fatalf("files %v: want the one recording", files)
	}
	if h.Width != 100 || h.Height != 30 {
		t.Fatalf("header %+v", h)
	}
	for _, ev := range evs {
		if ev.Type == "r" && ev.Data != "100x30" {
			t.Fatalf("resize to %q: the holder's size is 100x30", ev.Data)
		}
	}
	if last := evs[len(evs)-1].Time; last < firstLast {
		t.Fatalf("continued at %vs, before the first gateway's last event %vs", last, firstLast)
	}
	for _, m := range markers(evs) {
		if !strings.HasPrefix(m, offsetMarker) {
			t.Fatalf("marker %q: nothing was lost", m)
		}
	}
	checkMode(t, path, 0o600)
	if n := strings.Count(logs.String(), "recording continued"); n != 2 {
		t.Fatalf("%d continuations logged, want 2:\n%s", n, logs.String())
	}
	if got, ok := termtest.AsciinemaPlay(t, path); ok && got != want {
		t.Fatalf("asciinema play printed %q, want %q", got, want)
	}
}

// Output printed while no gateway ran that the holder no longer buffers is
// lost: the recording says how many bytes are missing, in a marker where
// they were, and goes on with what the holder still has.
func TestAdoptedRecordingMarksTheGap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs := &termtest.SyncBuffer{}
	b := newHeldBackend("0123abcd", 16)
	g1 := startGateway(t, b, dir, logs)
	b.print("before\r\n")
	g1.stop()
	b.print(strings.Repeat("x", 84) + "0123456789abcdef") // the ring keeps the last 16
	b.mu.Lock()
	b.size = sessions.Size{Cols: 120, Rows: 40} // resized while no gateway ran
	b.mu.Unlock()
	g2 := startGateway(t, b, dir, logs)
	b.print("after\r\n")
	g2.stop()

	_, evs := readCast(t, filepath.Join(dir, "web1", "0123abcd.cast"))
	if got, want := outputOf(evs), "before\r\n0123456789abcdef"+"after\r\n"; got != want {
		t.Fatalf("recorded output %q, want %q", got, want)
	}
	gap := -1
	for i, ev := range evs {
		if ev.Type == "m" && strings.Contains(ev.Data, "84 bytes of output lost") {
			gap = i
		}
	}
	if gap < 0 || outputOf(evs[:gap]) != "before\r\n" {
		t.Fatalf("no marker of the 84 lost bytes after %q: %q", "before\r\n", markers(evs))
	}
	if i := slices.IndexFunc(evs, func(ev Event) bool { return ev.Type == "r" }); i < 0 || evs[i].Data != "120x40" || i > gap {
		t.Fatalf("no resize to the holder's 120x40 at the continuation: %+v", evs)
	}
	if !strings.Contains(logs.String(), "bytes_lost=84") {
		t.Fatalf("log: %s", logs.String())
	}
}

// A recording that is not the gateway's own kind of file is never appended
// to nor overwritten: a symbolic link, a file of another mode or owner, a
// file that is not a complete recording. The continuation goes to a new
// SESSION.continued-N.cast that says why, and the log says it too.
func TestNotOwnRecordingIsLeftAlone(t *testing.T) {
	valid := `{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n" + `[0.5, "o", "old"]` + "\n"
	for _, tc := range []struct {
		name, why string
		plant     func(t *testing.T, path, elsewhere string)
	}{
		{"symbolic link", "is a symbolic link", func(t *testing.T, path, elsewhere string) {
			if err := os.Symlink(elsewhere, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"mode 0644", "has mode 0644, not 0600", func(t *testing.T, path, _ string) {
			writeFile(t, path, valid, 0o644)
		}},
		{"another owner", "is owned by uid 4242", func(t *testing.T, path, _ string) {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			writeFile(t, path, valid, 0o600)
			if err := os.Chown(path, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}},
		{"an unfinished last line", "the last line is not complete", func(t *testing.T, path, _ string) {
			writeFile(t, path, valid+`[0.7, "o", "cut sh`, 0o600)
		}},
		{"not a recording", "not a complete asciicast v2 recording", func(t *testing.T, path, _ string) {
			writeFile(t, path, "#!/bin/sh\necho hi\n", 0o600)
		}},
		{"hard link", "hard links", func(t *testing.T, path, elsewhere string) {
			if err := os.Link(elsewhere, path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "rec")
			if err := os.MkdirAll(filepath.Join(dir, "web1"), 0o700); err != nil {
				t.Fatal(err)
			}
			elsewhere := filepath.Join(base, "elsewhere.cast")
			writeFile(t, elsewhere, valid, 0o600)
			path := filepath.Join(dir, "web1", "0123abcd.cast")
			tc.plant(t, path, elsewhere)
			before, _ := os.ReadFile(path)
			logs := &termtest.SyncBuffer{}
			b := newHeldBackend("0123abcd", 1<<20)
			b.print("replayed\r\n")
			g := startGateway(t, b, dir, logs)
			b.print("live\r\n")
			g.stop()

			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatalf("the existing file changed:\n%q\n%q", before, after)
			}
			if after, _ := os.ReadFile(elsewhere); string(after) != valid {
				t.Fatalf("the file elsewhere changed: %q", after)
			}
			if !strings.Contains(logs.String(), "recording continues in a new file") || !strings.Contains(logs.String(), tc.why) {
				t.Fatalf("log lacks %q:\n%s", tc.why, logs.String())
			}
			cont := filepath.Join(dir, "web1", "0123abcd.continued-1.cast")
			_, evs := readCast(t, cont)
			if got := outputOf(evs); got != "replayed\r\nlive\r\n" {
				t.Fatalf("continuation holds %q", got)
			}
			if m := markers(evs); len(m) < 2 || !strings.Contains(m[0], "continues 0123abcd.cast") || !strings.Contains(m[0], tc.why) {
				t.Fatalf("continuation's markers %q", m)
			}
			checkMode(t, cont, 0o600)

			// The next restart goes on in the continuation file.
			b.print("while down\r\n")
			g = startGateway(t, b, dir, logs)
			b.print("again\r\n")
			g.stop()
			_, evs = readCast(t, cont)
			if got := outputOf(evs); got != "replayed\r\nlive\r\nwhile down\r\nagain\r\n" {
				t.Fatalf("continuation holds %q after a second restart", got)
			}
			if files := castFiles(t, dir); len(files) != 2 {
				t.Fatalf("files %v: want the existing one and one continuation", files)
			}
		})
	}
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// Two gateways sharing a recording directory never write into one file:
// the one that records a session holds its file's lock, and another
// gateway serving the same session leaves the recording to it (and says
// so in its log).
func TestSecondGatewayLeavesTheRecordingToTheFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs1, logs2 := &termtest.SyncBuffer{}, &termtest.SyncBuffer{}
	b := newHeldBackend("0123abcd", 1<<20)
	g1 := startGateway(t, b, dir, logs1)
	b.print("one\r\n")
	path := filepath.Join(dir, "web1", "0123abcd.cast")
	waitFor(t, func() bool { b, _ := os.ReadFile(path); return bytes.Contains(b, []byte("one")) })

	r2, err := New(Config{Dir: dir, Logger: testLogger(logs2)})
	if err != nil {
		t.Fatal(err)
	}
	obs := r2.Observe(sessions.ObservedSession{Instance: "web1", Session: "0123abcd", Size: sessions.Size{Cols: 80, Rows: 24}, Held: true, Offset: 0, Replay: []byte("one\r\n")})
	obs.Output([]byte("SECOND GATEWAY"))
	obs.Close()
	closeRecorder(t, r2)
	b.print("two\r\n")
	g1.stop()

	_, evs := readCast(t, path)
	if got := outputOf(evs); got != "one\r\ntwo\r\n" {
		t.Fatalf("recorded %q", got)
	}
	if !strings.Contains(logs2.String(), "another gateway records this session") {
		t.Fatalf("second gateway's log: %s", logs2.String())
	}
	if files := castFiles(t, dir); len(files) != 1 {
		t.Fatalf("files %v", files)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A continued recording's times never go back: they are seconds since its
// header's timestamp, and never less than its last event's, even when that
// lies ahead of the clock (a clock that was set back).
func TestContinuedTimesNeverDecrease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	if err := os.MkdirAll(filepath.Join(dir, "web1"), 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	path := filepath.Join(dir, "web1", "0123abcd.cast")
	for _, tc := range []struct {
		name    string
		ts      int64
		last    float64
		atLeast float64
	}{
		{"clock set back", now.Unix() - 10, 1000, 1000},
		{"an hour later", now.Add(-time.Hour).Unix(), 2, 3599},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(path)
			writeFile(t, path, `{"version":2,"width":80,"height":24,"timestamp":`+itoa(tc.ts)+"}\n"+
				`[0.000000, "m", "termgate: at output byte 0"]`+"\n"+`[`+ftoa(tc.last)+`, "o", "old"]`+"\n", 0o600)
			r, err := New(Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "0123abcd", Size: sessions.Size{Cols: 80, Rows: 24}, Held: true, Offset: 0, Replay: []byte("old new")})
			obs.Output([]byte(" live"))
			obs.Close()
			closeRecorder(t, r)
			_, evs := readCast(t, path)
			if got := outputOf(evs); got != "old new live" {
				t.Fatalf("output %q", got)
			}
			if got := evs[len(evs)-1].Time; got < tc.atLeast || got > tc.atLeast+60 {
				t.Fatalf("last event at %vs, want about %vs", got, tc.atLeast)
			}
		})
	}
}

func itoa(n int64) string   { return strconv.FormatInt(n, 10) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }

// Output that is not valid UTF-8 (written as U+FFFD, which says nothing of
// how many bytes it stood for), even a character cut by the restart, does
// not lose the recording its place: nothing is repeated or marked lost.
func TestAdoptedRecordingKeepsItsPlaceAfterInvalidUTF8(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs := &termtest.SyncBuffer{}
	b := newHeldBackend("0123abcd", 1<<20)
	g1 := startGateway(t, b, dir, logs)
	b.print("a\xffb\r\n")
	b.print("caf\xc3") // the rest of é comes after the restart
	g1.stop()
	b.print("\xa9!\r\n")
	g2 := startGateway(t, b, dir, logs)
	b.print("\xf0\x9f\x98\x80\r\n")
	g2.stop()
	_, evs := readCast(t, filepath.Join(dir, "web1", "0123abcd.cast"))
	if got, want := outputOf(evs), "a\ufffdb\r\ncaf\ufffd\ufffd!\r\n😀\r\n"; got != want {
		t.Fatalf("recorded %q, want %q", got, want)
	}
	for _, m := range markers(evs) {
		if !strings.HasPrefix(m, offsetMarker) {
			t.Fatalf("marker %q", m)
		}
	}
}

// A held session whose connection to its holder broke is adopted again by
// the same gateway: its new recording waits for the old one to close the
// file and continues it (it is not "another gateway").
func TestReadoptedInTheSameGatewayContinues(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs := &termtest.SyncBuffer{}
	b := newHeldBackend("0123abcd", 1<<20)
	g := startGateway(t, b, dir, logs)
	b.print("one\r\n")
	b.mu.Lock()
	conn := b.conn
	b.mu.Unlock()
	conn.drop(io.EOF) // the connection to the holder broke
	waitFor(t, func() bool { return len(g.reg.Sessions()) == 0 })
	b.print("two\r\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := g.reg.AdoptAll(ctx); n != 1 {
		t.Fatalf("adopted %d", n)
	}
	b.print("three\r\n")
	g.stop()
	_, evs := readCast(t, filepath.Join(dir, "web1", "0123abcd.cast"))
	if got := outputOf(evs); got != "one\r\ntwo\r\nthree\r\n" {
		t.Fatalf("recorded %q\n%s", got, logs.String())
	}
	if strings.Contains(logs.String(), "another gateway") {
		t.Fatalf("log: %s", logs.String())
	}
}
