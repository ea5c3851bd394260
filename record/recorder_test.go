package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func closeRecorder(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatalf("close recorder: %v", err)
	}
}

func readCast(t *testing.T, path string) (Header, []Event) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, evs, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return h, evs
}

func outputOf(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == "o" {
			b.WriteString(ev.Data)
		}
	}
	return b.String()
}

// A session's recording is an asciicast v2 file at DIR/INSTANCE/SESSION.cast
// (0600 in a 0700 directory) with the header, the output and the resizes in
// order, times never decreasing, and asciinema plays it.
func TestRecordingIsAsciicastV2(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs := &termtest.SyncBuffer{}
	r, err := New(Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "0123abcd", Size: sessions.Size{Cols: 100, Rows: 30}, Term: "xterm-256color"})
	if obs.(sessions.Recorded).Recording() != "web1/0123abcd.cast" {
		t.Fatalf("recording name %q", obs.(sessions.Recorded).Recording())
	}
	chunks := []string{"$ echo \"hi\"\r\n", "hi\r\n\x1b[1mbold\x1b[0m caf\xc3", "\xa9\r\n", "\xff tab\there\\\r\n"}
	obs.Output([]byte(chunks[0]))
	obs.Output([]byte(chunks[1]))
	obs.Resize(sessions.Size{Cols: 120, Rows: 40})
	obs.Output([]byte(chunks[2]))
	time.Sleep(20 * time.Millisecond) // a gap the times must show
	obs.Output([]byte(chunks[3]))
	obs.Close()
	closeRecorder(t, r)

	path := filepath.Join(dir, "web1", "0123abcd.cast")
	h, evs := readCast(t, path)
	if h.Version != 2 || h.Width != 100 || h.Height != 30 || h.Env["TERM"] != "xterm-256color" || h.Timestamp < time.Now().Add(-time.Minute).Unix() {
		t.Fatalf("header %+v", h)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, ev.Type)
	}
	if got := strings.Join(kinds, ""); got != "oorooo"[:len(got)] || !strings.Contains(got, "r") {
		t.Fatalf("event types %q", got)
	}
	for _, ev := range evs {
		if ev.Type == "r" && ev.Data != "120x40" {
			t.Fatalf("resize event %q", ev.Data)
		}
	}
	if last := evs[len(evs)-1].Time; last < 0.02 {
		t.Fatalf("last event at %vs: the 20ms gap is missing", last)
	}
	want := "$ echo \"hi\"\r\nhi\r\n\x1b[1mbold\x1b[0m café\r\n\ufffd tab\there\\\r\n"
	if got := outputOf(evs); got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	checkMode(t, path, 0o600)
	checkMode(t, filepath.Join(dir, "web1"), 0o700|os.ModeDir)
	checkMode(t, dir, 0o700|os.ModeDir)
	if !strings.Contains(logs.String(), "recording closed") {
		t.Fatalf("log: %s", logs.String())
	}
	if got, ok := termtest.AsciinemaPlay(t, path); ok && got != want {
		t.Fatalf("asciinema play printed %q, want %q", got, want)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Fatalf("%s has mode %v, want %v", path, fi.Mode(), want)
	}
}

// blockingFile is a disk that does not answer until released.
type blockingFile struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
	closed  bool
}

func (f *blockingFile) Write(p []byte) (int, error) {
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}
func (f *blockingFile) Sync() error { return nil }
func (f *blockingFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// A disk that stops answering never blocks the session: Output returns,
// what does not fit in the queue is dropped, and the file says how much
// with a marker once the disk is back.
func TestSlowDiskNeverBlocksOutput(t *testing.T) {
	bf := &blockingFile{release: make(chan struct{})}
	logs := &termtest.SyncBuffer{}
	r, err := New(Config{QueueBytes: 64 << 10, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		create: func(string, string) (file, error) { return bf, nil }})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "s1", Size: sessions.Size{Cols: 80, Rows: 24}})
	chunk := bytes.Repeat([]byte("x"), 4096)
	const n = 1000 // 4 MB, 64 times the queue
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			obs.Output(chunk)
		}
		obs.Resize(sessions.Size{Cols: 90, Rows: 30})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		close(bf.release)
		t.Fatal("Output blocked on a disk that does not answer")
	}
	close(bf.release)
	obs.Output([]byte("tail"))
	obs.Close()
	closeRecorder(t, r)
	_, evs, err := Read(bytes.NewReader(bf.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var kept, dropped int
	var sawMarker, sawResize bool
	for _, ev := range evs {
		switch ev.Type {
		case "o":
			kept += len(ev.Data)
		case "m":
			sawMarker = true
			var k int
			if _, err := fmtSscanf(ev.Data, &k); err != nil {
				t.Fatalf("marker %q: %v", ev.Data, err)
			}
			dropped += k
		case "r":
			sawResize = ev.Data == "90x30"
		}
	}
	if !sawMarker || !sawResize || kept+dropped != n*len(chunk)+len("tail") || !strings.HasSuffix(outputOf(evs), "tail") {
		t.Fatalf("marker %v, resize %v, kept %d + dropped %d bytes, want %d", sawMarker, sawResize, kept, dropped, n*len(chunk)+4)
	}
	if !strings.Contains(logs.String(), "recording dropped output") || !bf.closed {
		t.Fatalf("no warning in the log or file not closed: %s", logs.String())
	}
	t.Logf("disk blocked: %d bytes kept, %d dropped and marked", kept, dropped)
}

// A full disk stops the recording with an error in the log; the session's
// output calls go on returning.
func TestFullDiskStopsTheRecordingOnly(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	logs := &termtest.SyncBuffer{}
	r, err := New(Config{Logger: slog.New(slog.NewTextHandler(logs, nil)),
		create: func(string, string) (file, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "s1", Size: sessions.Size{Cols: 80, Rows: 24}})
	for range 100 {
		obs.Output(bytes.Repeat([]byte("y"), 32<<10))
	}
	obs.Close()
	closeRecorder(t, r)
	if !strings.Contains(logs.String(), "recording stopped") || !strings.Contains(logs.String(), "no space left on device") {
		t.Fatalf("log: %s", logs.String())
	}
}

// Recordings go only where they belong: never through a symbolic link,
// never over an existing file, never outside DIR, never into a directory
// others can write.
func TestRecordingPathsAreSafe(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "rec")
	logs := &termtest.SyncBuffer{}
	r, err := New(Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "web1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web1", "taken.cast"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "open"), 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Join(dir, "open"), 0o777)
	for _, bad := range []string{"..", ".", "", "a/b", ".hidden", "x\x00y"} {
		if obs := r.Observe(sessions.ObservedSession{Instance: bad, Session: "s1", Size: sessions.Size{Cols: 80, Rows: 24}}); obs != nil {
			t.Errorf("instance %q was recorded", bad)
		}
		if obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: bad, Size: sessions.Size{Cols: 80, Rows: 24}}); obs != nil {
			t.Errorf("session %q was recorded", bad)
		}
	}
	for _, s := range []struct{ inst, sess string }{{"linked", "s1"}, {"web1", "taken"}, {"open", "s1"}} {
		obs := r.Observe(sessions.ObservedSession{Instance: s.inst, Session: s.sess, Size: sessions.Size{Cols: 80, Rows: 24}})
		obs.Output([]byte("secret"))
		obs.Close()
	}
	closeRecorder(t, r)
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatal("a recording went through a symbolic link")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "web1", "taken.cast")); string(b) != "keep" {
		t.Fatalf("an existing file was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "open", "s1.cast")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("recorded into a world-writable directory: %v", err)
	}
	for _, w := range []string{"not a directory (a symbolic link?)", "already exists", "writable by group or others"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs.String())
		}
	}
	// A recording directory others can write is refused at start.
	open := filepath.Join(base, "shared")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	if _, err := New(Config{Dir: open}); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Fatalf("New on a world-writable directory: %v", err)
	}
}

func fmtSscanf(s string, n *int) (int, error) {
	return fmt.Sscanf(s, "termgate: %d bytes", n)
}
