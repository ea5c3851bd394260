package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/record"
)

// A durable session's recording spans a gateway crash: the restarted
// gateway appends to the same SESSION.cast, with the output the shell
// printed while no gateway ran (from the holder's replay) and what came
// after, each once, times never decreasing, and asciinema plays the file.
func TestDurableRecordingSpansACrash(t *testing.T) {
	t.Parallel()
	recDir := filepath.Join(t.TempDir(), "rec")
	d := durableGateway(t, options{containers: []string{"web-1"}, args: []string{"--record-dir", recDir}})
	name := d.name("web-1")
	w := d.ws(t, tokAdmin, name)
	session := w.attached.Session
	path := filepath.Join(recDir, name, session+".cast")
	w.send("echo before-$((6*7)); (sleep 2; echo while-$((6*8))) &")
	w.expect(`before-42`)
	waitFile(t, path, "before-42")
	d.kill9(t)
	w.waitClosed()
	time.Sleep(3 * time.Second) // the background job prints while no gateway runs

	d.restart(t)
	w2 := d.ws(t, tokAdmin, name)
	if w2.attached.Session != session {
		t.Fatalf("after the restart: session %s, want %s", w2.attached.Session, session)
	}
	w2.send("echo after-$((6*9))")
	w2.expect(`after-54`)
	waitFile(t, path, "after-54")

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, evs, err := record.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	var out strings.Builder
	for _, ev := range evs {
		if ev.Type == "o" {
			out.WriteString(ev.Data)
		}
	}
	for _, want := range []string{"before-42", "while-48", "after-54"} {
		if n := strings.Count(out.String(), want); n != 1 {
			t.Errorf("%q is %d times in the recording, want once:\n%s", want, n, b)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(recDir, name)); len(entries) != 1 {
		t.Errorf("recording files %v: want the one", entries)
	}
	if played, ok := termtest.AsciinemaPlay(t, path); ok && !strings.Contains(played, "while-48") {
		t.Errorf("asciinema played %q", played)
	}
}

// waitFile waits until the file holds want (the recording writes when the
// output goes quiet).
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q: %q", path, want, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
