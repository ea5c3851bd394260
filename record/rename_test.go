package record

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// TestRecordingFollowsRename: issue 18 M2. When its instance is renamed,
// a session's recording moves to the new name's directory (0700, the file
// still 0600), everything recorded before with it, and goes on there:
// nothing is left under the old name, which another instance may take.
func TestRecordingFollowsRename(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web-1", Session: "0a1b", Size: sessions.Size{Cols: 80, Rows: 24}})
	obs.Output([]byte("before "))
	obs.(sessions.RenameObserver).Rename("privx")
	if got := obs.(sessions.Recorded).Recording(); got != "privx/0a1b.cast" {
		t.Fatalf("Recording() %q after the rename, want privx/0a1b.cast", got)
	}
	obs.Output([]byte("SECRET-AFTER-RENAME"))
	obs.(sessions.RenameObserver).Rename("privy")
	obs.Output([]byte(" again"))
	obs.Close()
	closeRecorder(t, r)

	for _, old := range []string{"web-1", "privx"} {
		if _, err := os.Lstat(filepath.Join(dir, old, "0a1b.cast")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a recording is left under the old name %s: %v", old, err)
		}
	}
	path := filepath.Join(dir, "privy", "0a1b.cast")
	_, evs := readCast(t, path)
	if got := outputOf(evs); got != "before SECRET-AFTER-RENAME again" {
		t.Fatalf("the moved recording holds %q", got)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode() != want {
			t.Fatalf("%s: %v, %v; want mode %v", p, fi.Mode(), err, want)
		}
	}
}

// TestRenameNeverReplaces: a file already under the new name is never
// replaced: the recording stops (it must not go on under the old name),
// says so in the log, and the session goes on.
func TestRenameNeverReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	logs := &termtest.SyncBuffer{}
	r, err := New(Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "privx"), 0o700); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "privx", "0a1c.cast")
	if err := os.WriteFile(theirs, []byte("not ours\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web-1", Session: "0a1c", Size: sessions.Size{Cols: 80, Rows: 24}})
	obs.Output([]byte("before "))
	obs.(sessions.RenameObserver).Rename("privx")
	obs.Output([]byte("SECRET-AFTER-RENAME"))
	obs.Close()
	closeRecorder(t, r)

	if b, _ := os.ReadFile(theirs); string(b) != "not ours\n" {
		t.Fatalf("the file under the new name was changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "web-1", "0a1c.cast")); strings.Contains(string(b), "SECRET") {
		t.Fatalf("output after the rename went on under the old name: %q", b)
	}
	if !strings.Contains(logs.String(), "renamed privx") {
		t.Fatalf("the log does not say why the recording stopped:\n%s", logs.String())
	}
}
