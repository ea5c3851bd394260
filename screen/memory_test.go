package screen

import (
	"fmt"
	"strings"
	"testing"
)

// allocatedCells counts the cells a terminal's screens hold in memory,
// spare capacity included (what a huge screen leaves behind), and the row
// slots of their line arrays.
func allocatedCells(t *Terminal) (cells, rows int) {
	for _, b := range []*buffer{&t.main, &t.alt} {
		rows += cap(b.lines)
		for _, l := range b.lines {
			cells += cap(l.cells)
		}
	}
	return cells, rows
}

// Issue 20 D4: after a resize storm through sizes up to 1000x1000 ends at
// 80x24, the emulator holds about an 80x24 screen's memory again (main
// and alternate screen, output written at every size), not the huge
// screen's million cells; and what it shows is still right.
func TestScreenGivesBackAHugeScreensMemory(t *testing.T) {
	term := New(80, 24, 64<<10)
	term.Write([]byte("\x1b[?1049h")) // the alternate screen too
	for i, size := range [][2]int{{1000, 1000}, {80, 24}, {1000, 1000}, {10, 5}, {999, 1000}, {80, 24}} {
		term.Resize(size[0], size[1])
		fmt.Fprintf(term, "\x1b[%d;%dHsize %d", size[1], 1, i)
	}
	term.Write([]byte("\x1b[?1049l\x1b[HMAIN SCREEN"))
	cells, rows := allocatedCells(term)
	const screen = 80 * 24
	if cells > 2*2*screen || rows > 2*2*24 {
		t.Fatalf("after 1000x1000 and back to 80x24 the screens hold %d cells in %d row slots; an 80x24 screen pair needs %d in %d", cells, rows, 2*screen, 2*24)
	}
	if got := term.Text(); !strings.Contains(got, "MAIN SCREEN") {
		t.Fatalf("the main screen after the storm shows\n%s", got)
	}
	if w, h := term.Size(); w != 80 || h != 24 {
		t.Fatalf("size %dx%d, want 80x24", w, h)
	}
}
