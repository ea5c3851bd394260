package screen

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/termgate/termgate/screen/sanitize"
)

// FuzzTerminal feeds arbitrary output (the shell's, so untrusted) in two
// splits: the terminal never panics, a wide character never loses a half,
// and its snapshot restores its state in a fresh terminal.
func FuzzTerminal(f *testing.F) {
	for i := range 20 {
		r := rand.New(rand.NewPCG(uint64(i), 3))
		f.Add([]byte(genOutput(r, 40, 20, 6)), uint8(20), uint8(6))
	}
	f.Add([]byte("$ \u009b6n\u009d11;?\u009c\u0090$qm\u009c\x9b6n\u0085x\u0084"), uint8(20), uint8(6))
	f.Add([]byte("\x1b[?1049h\x1b[5;3r\x1b[?6h\x1b[2;2H日本\x1b[L\x1b[3@e\u0301\x1b7\x1b[?1049l"), uint8(7), uint8(5))
	f.Fuzz(func(t *testing.T, out []byte, w, h uint8) {
		cols, rows := 1+int(w)%60, 1+int(h)%30
		a := New(cols, rows, 4<<10)
		a.Write(out)
		b := New(cols, rows, 4<<10)
		for i := 0; i < len(out); i += 3 {
			b.Write(out[i:min(i+3, len(out))])
		}
		if got, want := dump(b), dump(a); got != want {
			t.Fatalf("split output gives another state\n%s", diff(want, got))
		}
		if x, y, bad := orphan(a); bad {
			t.Fatalf("a wide character lost a half at %d,%d", x, y)
		}
		c := New(cols, rows, 4<<10)
		c.Write(a.Snapshot())
		if !a.alt.saved.valid {
			c.alt.saved = cursor{}
		}
		if a.title == "" {
			c.title = ""
		}
		if got, want := dump(c), dump(a); got != want {
			t.Fatalf("the snapshot does not restore the state\nsnapshot %q\n%s", a.Snapshot(), diff(want, got))
		}
		// The snapshot asks the client's terminal nothing: the replay
		// sanitizer finds no query in it.
		if snap := a.Snapshot(); !bytes.Equal(sanitize.StripQueries(snap), snap) {
			t.Fatalf("the snapshot holds something the sanitizer removes: %q", snap)
		}
		// Nor does it hold a C1 control, which the page's terminal would
		// act on (issue 18 item 8).
		if r := c1In(t, a.Snapshot()); r >= 0 {
			t.Fatalf("the snapshot carries U+%04X", r)
		}
	})
}
