package record

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// A recording that reaches Config.MaxBytes ends with an "m" event saying it
// was cut, is closed (a valid file, at most one line past the limit) and
// logs that once; the session's output after it is simply not recorded.
func TestMaxBytesCutsTheRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs := &termtest.SyncBuffer{}
	const max = 2000
	r, err := New(Config{Dir: dir, MaxBytes: max, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "cafe01", Size: sessions.Size{Cols: 80, Rows: 24}})
	var sent strings.Builder
	for i := 0; i < 200; i++ { // 10 KB: five times the limit
		chunk := strings.Repeat("x", 49) + "\n"
		sent.WriteString(chunk)
		obs.Output([]byte(chunk))
	}
	obs.Close()
	closeRecorder(t, r)

	path := filepath.Join(dir, "web1", "cafe01.cast")
	_, evs := readCast(t, path)
	last := evs[len(evs)-1]
	if last.Type != "m" || !strings.Contains(last.Data, "recording cut") || !strings.Contains(last.Data, "--record-max-size 2000") {
		t.Fatalf("last event %+v, want the cut marker", last)
	}
	out := outputOf(evs)
	if out == "" || !strings.HasPrefix(sent.String(), out) || len(out) >= sent.Len() {
		t.Fatalf("recorded %d bytes of output, not a strict prefix of the %d sent", len(out), sent.Len())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > max+200 {
		t.Fatalf("file is %d bytes, limit %d (plus one marker line)", fi.Size(), max)
	}
	if n := strings.Count(logs.String(), "recording cut"); n != 1 {
		t.Fatalf("logged the cut %d times:\n%s", n, logs.String())
	}
}

// Without MaxBytes nothing is cut.
func TestNoMaxBytesKeepsEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "cafe02", Size: sessions.Size{Cols: 80, Rows: 24}})
	want := strings.Repeat(strings.Repeat("y", 99)+"\n", 100)
	obs.Output([]byte(want))
	obs.Close()
	closeRecorder(t, r)
	_, evs := readCast(t, filepath.Join(dir, "web1", "cafe02.cast"))
	if got := outputOf(evs); got != want {
		t.Fatalf("recorded %d bytes, want %d", len(got), len(want))
	}
}
