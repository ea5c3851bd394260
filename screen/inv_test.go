package screen

import (
	"math/rand/v2"
	"testing"
)

// orphan reports a cell position whose wide-character halves are parted.
func orphan(t *Terminal) (int, int, bool) {
	for _, b := range []*buffer{&t.main, &t.alt} {
		for y, l := range b.lines {
			for x, c := range l.cells {
				if c.Attr&attrWideCont != 0 && (x == 0 || l.cells[x-1].Attr&attrWide == 0) {
					return x, y, true
				}
				if c.Attr&attrWide != 0 && (x+1 >= len(l.cells) || l.cells[x+1].Attr&attrWideCont == 0) {
					return x, y, true
				}
			}
		}
	}
	return 0, 0, false
}

// TestWideCharsStayWhole: no operation parts a wide character's halves.
func TestWideCharsStayWhole(t *testing.T) {
	for i := range 300 {
		r := rand.New(rand.NewPCG(uint64(i), 9))
		w, h := 5+r.IntN(40), 2+r.IntN(15)
		term := New(w, h, 1<<20)
		for range 200 {
			piece := genOutput(r, 1, w, h)
			term.Write([]byte(piece))
			if x, y, bad := orphan(term); bad {
				t.Fatalf("case %d: after %q a wide character is parted at %d,%d\n%s", i, piece, x, y, dump(term))
			}
		}
	}
}
