package record

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

var scanSeeds = []string{
	`{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n",
	`{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n" + `[0.000000, "m", "termgate: at output byte 5000"]` + "\n" + `[0.5, "o", "caf\u00e9"]` + "\n",
	`{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n" + `[0.5, "o", "\ufffd"]` + "\n" + `[1, "m", "termgate: at output byte 9223372036854775807"]` + "\n" + `[1, "o", "x"]` + "\n",
	`{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n" + `[0.5, "m", "termgate: recording cut at 10 bytes"]` + "\n",
	`{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n" + `[0.5, "o", "no newline"]`,
	`{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\r\n" + `[1e300, "o", "x"]` + "\r\n",
	`{"version":2,"width":80,"height":24,"timestamp":-1}` + "\n",
	`[1, "o", "x"]` + "\n",
}

// FuzzScan: whatever an existing recording holds (it is untrusted: the
// gateway reads a file it did not write in this run), scan neither panics
// nor accepts what Read refuses, and what it accepts it measured whole.
func FuzzScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	now := time.Unix(1800000000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		tl, err := scan(bytes.NewReader(data), now)
		if err != nil {
			return
		}
		if _, _, err := Read(bytes.NewReader(data)); err != nil {
			t.Fatalf("scan accepted what Read refuses (%v): %q", err, data)
		}
		if tl.size != int64(len(data)) || tl.last < 0 || (tl.known && tl.next < 0) {
			t.Fatalf("scan: %+v of %d bytes", tl, len(data))
		}
	})
}

// FuzzContinue: a held session's recording continued from whatever file
// is there either leaves the file exactly as it was (and continues in a
// new file) or appends to it, and an appended file is still a recording
// Read accepts (times never decrease), with the new output at its end.
func FuzzContinue(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s), int64(5003), []byte("caf\xc3"))
	}
	f.Fuzz(func(t *testing.T, data []byte, offset int64, replay []byte) {
		if offset < 0 || len(data) > 1<<16 {
			return
		}
		dir := filepath.Join(t.TempDir(), "rec")
		if err := os.MkdirAll(filepath.Join(dir, "web1"), 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "web1", "0123abcd.cast")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := New(Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "0123abcd", Size: sessions.Size{Cols: 80, Rows: 24}, Held: true, Offset: offset, Replay: replay})
		obs.Output([]byte("LIVE"))
		obs.Close()
		closeRecorder(t, r)
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(after, data) {
			return // left alone
		}
		if !bytes.HasPrefix(after, data) {
			t.Fatalf("the file was changed, not appended to:\n%q\n%q", data, after)
		}
		_, evs, err := Read(bytes.NewReader(after))
		if err != nil {
			t.Fatalf("continued file is not a recording (%v):\n%q", err, after)
		}
		if !strings.HasSuffix(outputOf(evs), "LIVE") {
			t.Fatalf("continued file ends with %q", outputOf(evs))
		}
	})
}
