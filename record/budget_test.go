package record

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// TestMaxTotalBoundsTheDirectory: issue 18 L3. With MaxTotal, what the
// directory's recordings hold (those already there included) stays within
// it: the recording that would pass it is cut with a marker naming the
// limit, no new session is recorded while the directory is full, and once
// files are removed recording starts again.
func TestMaxTotalBoundsTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	if err := os.MkdirAll(filepath.Join(dir, "web0"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "web0", "0001.cast")
	if err := os.WriteFile(old, make([]byte, 3000), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	logs := &termtest.SyncBuffer{}
	const total = 8000
	r, err := New(Config{Dir: dir, MaxTotal: total, Now: clock, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "0002", Size: sessions.Size{Cols: 80, Rows: 24}})
	for range 200 {
		obs.Output([]byte(strings.Repeat("x", 49) + "\n"))
	}
	obs.Close()
	closeRecorder(t, r) // waits for the file

	_, evs := readCast(t, filepath.Join(dir, "web1", "0002.cast"))
	if last := evs[len(evs)-1]; last.Type != "m" || !strings.Contains(last.Data, "--record-max-total 8000") {
		t.Fatalf("last event %+v, want the cut marker naming --record-max-total", last)
	}
	if n := dirSize(dir); n > total+300 {
		t.Fatalf("the directory holds %d bytes, budget %d (plus a header and a marker)", n, total)
	}

	r, err = New(Config{Dir: dir, MaxTotal: total, Now: clock, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer closeRecorder(t, r)
	if o := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "0003", Size: sessions.Size{Cols: 80, Rows: 24}}); o != nil {
		t.Fatal("a session was recorded in a full directory")
	}
	if !strings.Contains(logs.String(), "--record-max-total") {
		t.Fatalf("the log does not say why the session is not recorded:\n%s", logs.String())
	}
	if err := os.Remove(old); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "web1", "0002.cast")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(budgetRescan)
	mu.Unlock()
	o := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "0004", Size: sessions.Size{Cols: 80, Rows: 24}})
	if o == nil {
		t.Fatal("no recording after old ones were removed")
	}
	o.Close()
}
