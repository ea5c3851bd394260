package screen

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// fillScreen writes one row of cells with cell(x) and copies it into every
// row of t's main screen (writing a million cells through the parser
// would take the test's time, not the snapshot's), then puts the cursor
// at x, y.
func fillScreen(t *Terminal, cell func(x int) string, x, y int) {
	var row strings.Builder
	for i := range t.w {
		row.WriteString(cell(i))
	}
	t.Write([]byte("\x1b[H" + row.String() + "\x1b[m"))
	first := t.main.lines[0]
	for i := 1; i < t.h; i++ {
		l := &line{cells: append([]Cell(nil), first.cells...), wrapped: false}
		t.main.lines[i] = l
	}
	first.wrapped = false
	t.Write(fmt.Appendf(nil, "\x1b[%d;%dH", y+1, x+1))
}

// restore feeds a snapshot to a fresh terminal of the same size.
func restore(t *testing.T, a *Terminal, snap []byte) *Terminal {
	t.Helper()
	b := New(a.w, a.h, 64<<10)
	b.Write(snap)
	if b.x != a.x || b.y != a.y {
		t.Errorf("cursor at %d,%d after the snapshot, want %d,%d", b.x, b.y, a.x, a.y)
	}
	return b
}

// marks is 'a' with 15 combining marks (what a cell keeps at most), and
// a colour of its own per column: about 60 bytes a cell drawn in full.
func marks(x int) string {
	return fmt.Sprintf("\x1b[38;2;%d;%d;%dm", x%256, x/256, 7) + "a" + strings.Repeat("\u0301", 15)
}

// TestHugeScreenSnapshotIsBounded (red team round 3, M1): a 1000×1000
// screen of cells with combining marks and a colour change per cell drew
// a snapshot of about 60 MB, more than a client's 16 MiB queue. The
// snapshot now stays within SnapshotBound and draws what it can: every
// character, without its marks and colours.
func TestHugeScreenSnapshotIsBounded(t *testing.T) {
	a := New(1000, 1000, 64<<10)
	fillScreen(a, marks, 17, 500)
	snap := a.Snapshot()
	if bound := SnapshotBound(64 << 10); len(snap) > bound {
		t.Fatalf("snapshot of %d bytes, bound %d", len(snap), bound)
	}
	b := restore(t, a, snap)
	want := strings.TrimSuffix(strings.Repeat(strings.Repeat("a", 1000)+"\n", 1000), "\n")
	if got := b.Text(); got != want {
		t.Fatalf("restored text differs from the screen's characters (%d bytes, want %d)", len(got), len(want))
	}
}

// A screen whose marks alone make it too large keeps its colours: only
// the marks are left out.
func TestSnapshotLeavesOutMarksFirst(t *testing.T) {
	a := New(1000, 1000, 64<<10)
	fillScreen(a, func(x int) string {
		if x == 0 {
			return "\x1b[1;31ma" + strings.Repeat("\u0300", 15)
		}
		return "a" + strings.Repeat("\u0300", 15)
	}, 0, 0)
	snap := a.Snapshot()
	if len(snap) > SnapshotBound(64<<10) {
		t.Fatalf("snapshot of %d bytes, bound %d", len(snap), SnapshotBound(64<<10))
	}
	b := restore(t, a, snap)
	for _, y := range []int{0, 499, 999} {
		for _, x := range []int{0, 1, 999} {
			got, want := b.main.lines[y].cells[x], a.main.lines[y].cells[x]
			if got.Pen != want.Pen || got.Rune != 'a' {
				t.Fatalf("cell %d,%d restored as %+v, want %q with pen %+v", x, y, got, 'a', want.Pen)
			}
		}
	}
}

// A screen too large even as plain text (a million 4-byte characters) is
// drawn from the bottom: the rows that fit are exact, the ones above them
// blank.
func TestSnapshotOfTooMuchTextKeepsTheBottomRows(t *testing.T) {
	const ch = "\U00010348" // 4 bytes, one cell
	if utf8.RuneLen([]rune(ch)[0]) != 4 {
		t.Fatal("not a 4-byte character")
	}
	a := New(1000, 1000, 64<<10)
	fillScreen(a, func(int) string { return ch }, 3, 999)
	snap := a.Snapshot()
	if len(snap) > SnapshotBound(64<<10) {
		t.Fatalf("snapshot of %d bytes, bound %d", len(snap), SnapshotBound(64<<10))
	}
	b := restore(t, a, snap)
	rows := strings.Split(b.Text(), "\n")
	full := strings.Repeat(ch, 1000)
	kept := 0
	for i, r := range rows {
		switch {
		case r == full:
			kept++
		case r != "" || kept > 0:
			t.Fatalf("row %d restored as %d bytes after %d full rows: want blank rows, then full ones", i, len(r), kept)
		}
	}
	if kept < MaxScreenBytes/len(full)-1 || kept == 1000 {
		t.Fatalf("%d rows kept, want about %d", kept, MaxScreenBytes/len(full))
	}
}

// An ordinary screen loses nothing: the bound does not change a snapshot
// that fits.
func TestSnapshotThatFitsIsUnchanged(t *testing.T) {
	a := New(200, 60, 64<<10)
	fillScreen(a, marks, 5, 5)
	full := string(a.Snapshot())
	if !strings.Contains(full, "a"+strings.Repeat("\u0301", 15)) || !strings.Contains(full, "38;2;199;0;7") {
		t.Fatal("a 200×60 snapshot lost its marks or colours")
	}
	b := restore(t, a, []byte(full))
	if dump(b) != dump(a) {
		t.Fatalf("a 200×60 snapshot does not restore the state\n%s", diff(dump(a), dump(b)))
	}
}
