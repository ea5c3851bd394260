package screen

import "strconv"

// resetPrefix puts a client's terminal into a known state without a full
// reset (RIS would clear an SSH user's own scrollback): a soft reset, then
// each mode a soft reset leaves alone. clearScreen follows.
const resetPrefix = "\x1b[?1049l\x1b[!p\x1b[m\x1b[r\x1b[?6l\x1b[?7h\x1b[4l\x1b[20l\x1b[?1l\x1b>\x1b[?5l\x1b[?25h\x1b[0 q" +
	"\x1b(B\x1b)B\x0f\x1b[?9l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l\x1b[?1004l\x1b[?2004l"

// Snapshot returns the bytes that bring a terminal of the same size, in any
// state, to this terminal's state: scrollback, screens, cursor, modes.
func (t *Terminal) Snapshot() []byte {
	return t.AppendSnapshot(nil)
}

// AppendSnapshot appends Snapshot to dst.
func (t *Terminal) AppendSnapshot(dst []byte) []byte {
	dst = append(dst, resetPrefix...)
	// Scroll what the client shows into its own scrollback rather than
	// erase it (its earlier screen, or a notice it just printed, stays
	// there), then clear what a taller client still shows.
	dst = append(dst, "\x1b[999;1H"...)
	for range t.h {
		dst = append(dst, '\r', '\n')
	}
	dst = append(dst, "\x1b[H\x1b[2J"...)
	// Scrollback and the main screen are drawn as a stream of lines from
	// the top of the cleared screen: the scrollback lines scroll into the
	// client's own scrollback and the screen's rows end up in place.
	dst = append(dst, t.sb.bytes()...)
	dst = t.appendScreen(dst, t.main.lines, t.sbWrapped)
	if t.altMode != 0 {
		// The main screen's cursor is saved by ?1049h (and restored when the
		// program leaves); with 47 and 1047 the cursor is shared.
		on := "\x1b[?" + strconv.Itoa(t.altMode) + "h"
		if t.altMode == 1049 {
			dst = t.appendCursor(dst, t.main.saved, on)
		} else {
			dst = append(dst, on...)
		}
		dst = append(dst, "\x1b[m\x1b[H\x1b[2J"...)
		dst = t.appendScreen(dst, t.alt.lines, 0)
	}
	dst = append(dst, "\x1b[m"...)
	// The current screen's saved cursor (DECSC), then the cursor itself.
	if s := t.cur.saved; s.valid {
		dst = t.appendCursor(dst, s, "\x1b7")
	}
	if t.top != 0 || t.bot != t.h-1 {
		dst = append(dst, "\x1b["...)
		dst = strconv.AppendInt(dst, int64(t.top+1), 10)
		dst = append(dst, ';')
		dst = strconv.AppendInt(dst, int64(t.bot+1), 10)
		dst = append(dst, 'r')
	}
	dst = t.appendPosition(dst)
	dst = t.appendModes(dst)
	if t.charset[0] != 'B' {
		dst = append(dst, "\x1b(0"...)
	}
	if t.charset[1] != 'B' {
		dst = append(dst, "\x1b)0"...)
	}
	if t.gl == 1 {
		dst = append(dst, 0x0e)
	}
	if t.pen != (Pen{}) {
		dst = appendSGR(dst, t.pen)
	}
	return dst
}

// MaxScreenBytes bounds what a snapshot spends on drawing one screen (the
// main screen, and the alternate one when it is shown), so that a
// snapshot always fits a client's queue (red team round 3, M1: a 1000×1000
// window of cells with 15 combining marks each drew 31 MB). A screen that
// takes more is drawn with less: without combining marks, then without
// colours and attributes, then with its top rows left blank. A snapshot is
// then at most SnapshotBound(scrollback) bytes.
const MaxScreenBytes = 3 << 20

// snapshotOverhead bounds the rest of a snapshot: the reset prefix, the
// newlines that scroll the client's screen away (one per row, at most
// 1000), the cursors, modes, scroll region and title (at most maxOSC).
const snapshotOverhead = 16 << 10

// SnapshotBound is the largest snapshot of a terminal keeping scrollback
// bytes of scrollback.
func SnapshotBound(scrollback int) int { return scrollback + 2*MaxScreenBytes + snapshotOverhead }

// detail says what renderLine draws of a cell.
type detail int

const (
	detailFull    detail = iota
	detailNoMarks        // combining marks left out
	detailPlain          // marks, colours and attributes left out
)

// appendScreen draws a screen's rows (see appendRows) in at most
// MaxScreenBytes: with every detail when that fits, else with less (see
// MaxScreenBytes). A pass gives up as soon as it is over the bound, so
// what it allocates is bounded too.
func (t *Terminal) appendScreen(dst []byte, ls []*line, minEnd int) []byte {
	start := len(dst)
	defer func() { t.detail = detailFull }()
	for d := detailFull; d <= detailPlain; d++ {
		t.detail = d
		var ok bool
		if dst, ok = t.appendRows(dst[:start], ls, minEnd, 0, start+MaxScreenBytes); ok {
			return dst
		}
	}
	// Plain text is still too much (1000×1000 cells of 4-byte
	// characters): the bottom rows, where the cursor usually is, are
	// drawn, the ones above them left blank.
	dst, _ = t.appendRows(dst[:start], ls, minEnd, t.rowsOver(ls, MaxScreenBytes), -1)
	return dst
}

// rowsOver returns how many of the top rows must be left blank for the
// others to fit in budget bytes, drawn plain.
func (t *Terminal) rowsOver(ls []*line, budget int) int {
	used := 2 * len(ls) // the line ends
	for i := len(ls) - 1; i >= 0; i-- {
		t.sbTmp = t.renderLine(t.sbTmp[:0], ls[i], Pen{}, 1)
		if used += len(t.sbTmp); used > budget {
			return i + 1
		}
	}
	return 0
}

// appendRows draws rows one after the other from the cursor's row (the
// top): a row that wraps into the next is drawn to its last column so the
// wrap happens again; the last row never wraps (that would scroll). Rows
// before blank are left empty. With limit >= 0 it gives up (false) once
// dst is longer than limit.
func (t *Terminal) appendRows(dst []byte, ls []*line, minEnd, blank, limit int) ([]byte, bool) {
	for i, l := range ls {
		if i < blank {
			if i < len(ls)-1 {
				dst = append(dst, '\r', '\n')
			}
			minEnd = 0
			continue
		}
		if i == len(ls)-1 && l.wrapped {
			c := *l
			c.wrapped = false
			l = &c
		}
		dst = t.renderLine(dst, l, Pen{}, minEnd)
		minEnd = 0
		if i < len(ls)-1 && !l.wrapped {
			dst = append(dst, '\r', '\n')
		} else {
			minEnd = 1
		}
		if limit >= 0 && len(dst) > limit {
			return dst, false
		}
	}
	return dst, true
}

// appendCursor moves to c with its pen, origin mode and charsets, then
// emits save (DECSC, or the ?1049h that saves as it switches) and returns
// the pen and charsets to their defaults.
func (t *Terminal) appendCursor(dst []byte, c cursor, save string) []byte {
	if c.origin {
		dst = append(dst, "\x1b[?6h"...) // homes the cursor: set it before moving
	}
	dst = appendCUP(dst, c.x, c.y) // the region is the whole screen here
	if c.pen != (Pen{}) {
		dst = appendSGR(dst, c.pen)
	}
	if c.charset[0] != 'B' {
		dst = append(dst, "\x1b(0"...)
	}
	if c.charset[1] != 'B' {
		dst = append(dst, "\x1b)0"...)
	}
	if c.gl == 1 {
		dst = append(dst, 0x0e)
	}
	dst = append(dst, save...)
	dst = append(dst, "\x1b[m\x1b(B\x1b)B\x0f"...)
	if c.origin {
		dst = append(dst, "\x1b[?6l"...)
	}
	return dst
}

func appendCUP(dst []byte, x, y int) []byte {
	dst = append(dst, "\x1b["...)
	dst = strconv.AppendInt(dst, int64(y+1), 10)
	dst = append(dst, ';')
	dst = strconv.AppendInt(dst, int64(x+1), 10)
	return append(dst, 'H')
}

// appendPosition restores the cursor, including a pending wrap: the cell
// before it is drawn again, which leaves a real terminal in the same state.
func (t *Terminal) appendPosition(dst []byte) []byte {
	if t.origin {
		dst = append(dst, "\x1b[?6h"...)
	}
	row := t.y
	if t.origin {
		row -= t.top
	}
	if !t.pendingWrap {
		return appendCUP(dst, t.x, row)
	}
	l := t.cur.lines[t.y]
	x := t.x
	if l.cells[x].Attr&attrWideCont != 0 && x > 0 {
		x--
	}
	c := l.cells[x]
	dst = appendCUP(dst, x, row)
	pen := c.Pen
	pen.Attr &^= attrWide
	dst = appendSGR(dst, pen)
	dst = t.appendCell(dst, c.Rune)
	return append(dst, "\x1b[m"...)
}

func (t *Terminal) appendModes(dst []byte) []byte {
	m := t.modes
	set := func(on bool, s string) {
		if on {
			dst = append(dst, s...)
		}
	}
	set(m.insert, "\x1b[4h")
	set(m.newline, "\x1b[20h")
	set(m.appCursor, "\x1b[?1h")
	set(m.appKeypad, "\x1b=")
	set(m.reverse, "\x1b[?5h")
	set(m.noAutowrap, "\x1b[?7l")
	set(m.focus, "\x1b[?1004h")
	set(m.paste, "\x1b[?2004h")
	for _, v := range []int{m.mouse, m.mouseEnc} {
		if v != 0 {
			dst = append(dst, "\x1b[?"...)
			dst = strconv.AppendInt(dst, int64(v), 10)
			dst = append(dst, 'h')
		}
	}
	if m.cursorStyle != 0 {
		dst = append(dst, "\x1b["...)
		dst = strconv.AppendInt(dst, int64(m.cursorStyle), 10)
		dst = append(dst, " q"...)
	}
	set(m.cursorHidden, "\x1b[?25l")
	if t.title != "" {
		dst = append(dst, "\x1b]2;"...)
		dst = append(dst, t.title...)
		dst = append(dst, '\a')
	}
	return dst
}
