package screen

import (
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Mouse tracking modes and encodings (DEC private mode numbers).
const (
	mouseX10     = 9
	mouseNormal  = 1000
	mouseButton  = 1002
	mouseAny     = 1003
	encUTF8      = 1005
	encSGR       = 1006
	encURXVT     = 1015
	encSGRPixels = 1016
)

// modes are the terminal modes a snapshot restores.
type modes struct {
	appCursor    bool // DECCKM (?1)
	appKeypad    bool // DECKPAM (ESC =)
	reverse      bool // DECSCNM (?5)
	origin       bool // DECOM (?6)
	noAutowrap   bool // DECAWM (?7) reset
	cursorHidden bool // DECTCEM (?25) reset
	insert       bool // IRM (4)
	newline      bool // LNM (20)
	focus        bool // ?1004
	paste        bool // ?2004
	mouse        int  // 0 or one of mouseX10..mouseAny
	mouseEnc     int  // 0 or one of encUTF8..encSGRPixels
	cursorStyle  int  // DECSCUSR parameter
}

// cursor is a position with what DECSC saves along with it.
type cursor struct {
	x, y    int
	pen     Pen
	origin  bool
	charset [2]byte
	gl      int
	valid   bool // set by a save; a restore without one homes the cursor
}

// buffer is one of the two screens.
type buffer struct {
	lines []*line
	saved cursor // DECSC / ?1049 save slot of this screen
}

// Terminal is a headless terminal emulator: feed it output with Write, ask
// for a Snapshot. It is not safe for concurrent use.
type Terminal struct {
	w, h      int
	main, alt buffer
	cur       *buffer
	altMode   int // 0 on the main screen, else 47, 1047 or 1049

	x, y        int
	pendingWrap bool // the last column was written: the next character wraps
	wrapping    bool // a wrap is scrolling: the row it leaves continues into the new one
	pen         Pen
	top, bot    int // scroll region, inclusive rows
	modes
	charset [2]byte // G0, G1: 'B' (ASCII) or '0' (DEC line drawing)
	gl      int     // 0 or 1: which of G0/G1 is in use (SI/SO)
	tabs    []bool
	title   string

	sb        scrollback
	sbWrapped int            // 1 when the last scrollback line wraps into the next
	sbTmp     []byte         // reused to render a line
	clusters  []string       // characters with combining marks, by Rune-clusterBase
	clusterN  map[string]int // index into clusters

	// Reply, when set, receives the answers to terminal queries (cursor
	// position, device attributes) found in the output.
	Reply func([]byte)

	p parser

	// perRune sends every character through print, as before the ASCII
	// fast path: the differential tests compare the two.
	perRune bool

	// detail is how much of each cell renderLine draws: always
	// detailFull, but while a snapshot draws a screen too large for
	// MaxScreenBytes (see appendScreen).
	detail detail
}

// maxClusters bounds the combining-character table; marks beyond it are
// dropped (the base character stays).
const maxClusters = 4096

// New returns a terminal of w×h cells keeping at most scrollbackBytes of
// rendered scrollback.
func New(w, h, scrollbackBytes int) *Terminal {
	t := &Terminal{w: w, h: h}
	t.sb.limit = scrollbackBytes
	t.reset()
	return t
}

// reset is RIS: everything but the scrollback and the size.
func (t *Terminal) reset() {
	t.main = buffer{lines: newLines(t.w, t.h)}
	t.alt = buffer{} // its lines are made when a program switches to it
	t.cur, t.altMode = &t.main, 0
	t.x, t.y, t.pendingWrap = 0, 0, false
	t.pen = Pen{}
	t.top, t.bot = 0, t.h-1
	t.modes = modes{}
	t.charset = [2]byte{'B', 'B'}
	t.gl = 0
	t.title = ""
	t.resetTabs()
	t.p = parser{}
}

func newLines(w, h int) []*line {
	ls := make([]*line, h)
	for i := range ls {
		ls[i] = newLine(w, 0)
	}
	return ls
}

func (t *Terminal) resetTabs() {
	t.tabs = make([]bool, t.w)
	for i := 8; i < t.w; i += 8 {
		t.tabs[i] = true
	}
}

// Size returns the terminal's columns and rows.
func (t *Terminal) Size() (cols, rows int) { return t.w, t.h }

// Title is the window title last set (OSC 0 or 2).
func (t *Terminal) Title() string { return t.title }

// AltScreen reports whether the alternate screen is shown.
func (t *Terminal) AltScreen() bool { return t.altMode != 0 }

// Cursor returns the cursor's column and row (from 0).
func (t *Terminal) Cursor() (x, y int) { return t.x, t.y }

// AppCursorKeys reports whether the cursor keys send application codes (DECCKM).
func (t *Terminal) AppCursorKeys() bool { return t.appCursor }

// ScrollbackLines is the number of lines held in the scrollback.
func (t *Terminal) ScrollbackLines() int { return t.sb.lines }

// Resize changes the size without reflowing: a shrinking main screen
// pushes its top lines into the scrollback to keep the cursor on screen.
func (t *Terminal) Resize(w, h int) {
	if w < 1 || h < 1 || (w == t.w && h == t.h) {
		return
	}
	if t.altMode == 0 && t.y >= h {
		t.scrollUpIn(&t.main, 0, t.h-1, t.y-h+1)
		t.y = h - 1
	}
	for _, b := range []*buffer{&t.main, &t.alt} {
		if b.lines == nil {
			continue
		}
		b.lines = resizeLines(b.lines, w, h)
		b.saved.x, b.saved.y = min(b.saved.x, w-1), min(b.saved.y, h-1)
	}
	t.w, t.h = w, h
	t.x, t.y = min(t.x, w-1), min(t.y, h-1)
	t.pendingWrap = false
	t.top, t.bot = 0, h-1
	t.resetTabs()
}

func resizeLines(ls []*line, w, h int) []*line {
	if len(ls) > h {
		clear(ls[h:]) // the rows cut off go with their cells
		ls = shrunk(ls[:h])
	}
	for len(ls) < h {
		ls = append(ls, newLine(w, 0))
	}
	for _, l := range ls {
		if len(l.cells) > w {
			l.cells = shrunk(l.cells[:w])
			if last := &l.cells[w-1]; last.Attr&attrWide != 0 {
				*last = Cell{}
			}
			l.wrapped = false
		} else if len(l.cells) < w {
			l.cells = append(l.cells, make([]Cell, w-len(l.cells))...)
			l.wrapped = false
		}
	}
	return ls
}

// shrunk returns s, copied into an array of its own length when its array
// is more than twice as long: a screen made small again after a huge one
// (a resize storm of up to 1000x1000, issue 20 D4) gives the huge one's
// memory back instead of keeping it for the session's life. Within a
// factor of two the array is kept, so a window dragged to and fro does
// not copy every row each time.
func shrunk[E any](s []E) []E {
	if cap(s) <= 2*len(s) {
		return s
	}
	return append(make([]E, 0, len(s)), s...)
}

// Write feeds output to the terminal.
func (t *Terminal) Write(p []byte) (int, error) {
	t.feed(p)
	return len(p), nil
}

// print writes one character at the cursor.
func (t *Terminal) print(r rune) {
	if r < 0x80 {
		if t.charset[t.gl] == '0' && r >= 0x5f && r <= 0x7e {
			r = decGraphics[r-0x5f]
		} else {
			t.put(r, 1)
			return
		}
	}
	w := runewidth.RuneWidth(r)
	if w == 0 {
		t.combine(r)
		return
	}
	t.put(r, min(w, 2))
}

func (t *Terminal) put(r rune, w int) {
	if t.pendingWrap {
		if !t.noAutowrap {
			t.wrap()
		}
		t.pendingWrap = false
	}
	if w == 2 && t.x == t.w-1 {
		if t.noAutowrap || t.w < 2 {
			t.x = max(0, t.w-2)
		} else { // no room for both halves: wrap early
			t.wrap()
		}
	}
	if w > t.w {
		return
	}
	l := t.cur.lines[t.y]
	if t.insert {
		splitAt(l, t.x)
		copy(l.cells[t.x+w:], l.cells[t.x:])
		l.clear(t.x, t.x+w, 0) // the cells shifted out of the way
		t.fixWideEnd(l)
	}
	t.clearWide(l, t.x)
	if w == 2 {
		t.clearWide(l, t.x+1)
		l.cells[t.x] = Cell{Rune: r, Pen: Pen{FG: t.pen.FG, BG: t.pen.BG, Attr: t.pen.Attr | attrWide}}
		l.cells[t.x+1] = Cell{Pen: Pen{FG: t.pen.FG, BG: t.pen.BG, Attr: t.pen.Attr | attrWideCont}}
	} else {
		l.cells[t.x] = Cell{Rune: r, Pen: t.pen}
	}
	t.x += w
	if t.x >= t.w {
		t.x = t.w - 1
		t.pendingWrap = !t.noAutowrap
	}
}

// wrap continues the cursor's row on the next one.
func (t *Terminal) wrap() {
	t.cur.lines[t.y].wrapped = true
	t.x = 0
	t.wrapping = true
	t.index()
	t.wrapping = false
}

// clearWide blanks the other half of a wide character about to lose one.
func (t *Terminal) clearWide(l *line, x int) {
	if x >= len(l.cells) {
		return
	}
	c := l.cells[x]
	if c.Attr&attrWideCont != 0 && x > 0 {
		l.cells[x-1] = Cell{Pen: Pen{BG: l.cells[x-1].BG}}
	}
	if c.Attr&attrWide != 0 && x+1 < len(l.cells) {
		l.cells[x+1] = Cell{Pen: Pen{BG: l.cells[x+1].BG}}
	}
}

// splitAt blanks a wide character whose halves a shift at x would part.
func splitAt(l *line, x int) {
	if x > 0 && x < len(l.cells) && l.cells[x].Attr&attrWideCont != 0 {
		l.cells[x-1] = Cell{Pen: Pen{BG: l.cells[x-1].BG}}
		l.cells[x] = Cell{Pen: Pen{BG: l.cells[x].BG}}
	}
}

// fixWideEnd blanks a wide character's left half pushed into the last column.
func (t *Terminal) fixWideEnd(l *line) {
	if last := &l.cells[len(l.cells)-1]; last.Attr&attrWide != 0 {
		*last = Cell{Pen: Pen{BG: last.BG}}
	}
}

// combine attaches a zero-width character to the one before the cursor.
func (t *Terminal) combine(r rune) {
	x := t.x
	if !t.pendingWrap {
		x--
	}
	if x < 0 {
		return
	}
	l := t.cur.lines[t.y]
	if l.cells[x].Attr&attrWideCont != 0 && x > 0 {
		x--
	}
	c := &l.cells[x]
	if c.Rune == 0 {
		return
	}
	s := t.cellText(c.Rune) + string(r)
	if len(s) > 32 {
		return
	}
	i, ok := t.clusterN[s]
	if !ok {
		if len(t.clusters) >= maxClusters {
			return
		}
		if t.clusterN == nil {
			t.clusterN = map[string]int{}
		}
		i = len(t.clusters)
		t.clusters = append(t.clusters, s)
		t.clusterN[s] = i
	}
	c.Rune = clusterBase + rune(i)
}

// cellText is what a cell's rune stands for.
func (t *Terminal) cellText(r rune) string {
	if r >= clusterBase {
		return t.clusters[r-clusterBase]
	}
	if r == 0 {
		return " "
	}
	return string(r)
}

func (t *Terminal) appendCell(dst []byte, r rune) []byte {
	switch {
	case r == 0:
		return append(dst, ' ')
	case r < utf8.RuneSelf:
		return append(dst, byte(r))
	case r >= clusterBase:
		return append(dst, t.clusters[r-clusterBase]...)
	}
	return utf8.AppendRune(dst, r)
}

// index moves the cursor down one row, scrolling at the region's bottom.
func (t *Terminal) index() {
	switch {
	case t.y == t.bot:
		t.scrollUp(1)
	case t.y < t.h-1:
		t.y++
	}
}

// reverseIndex moves the cursor up one row, scrolling at the region's top.
func (t *Terminal) reverseIndex() {
	switch {
	case t.y == t.top:
		t.scrollDown(1)
	case t.y > 0:
		t.y--
	}
}

func (t *Terminal) scrollUp(n int) { t.scrollUpIn(t.cur, t.top, t.bot, n) }

// scrollUpIn scrolls rows top..bot of b up by n; rows leaving the top of the
// whole main screen go to the scrollback.
func (t *Terminal) scrollUpIn(b *buffer, top, bot, n int) {
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	ls := b.lines
	keep := b == &t.main && top == 0
	gone := make([]*line, n)
	copy(gone, ls[top:top+n])
	for i, l := range gone {
		if keep {
			// The region's last row has no next row to wrap into.
			wrapped := l.wrapped && top+i < bot
			if !wrapped {
				l.wrapped = false
			}
			t.sbTmp = t.renderLine(t.sbTmp[:0], l, Pen{}, t.sbWrapped)
			t.sb.add(t.sbTmp, !wrapped)
			t.sbWrapped = 0
			if wrapped {
				t.sbWrapped = 1
			}
		}
	}
	copy(ls[top:], ls[top+n:bot+1])
	for i, l := range gone { // reuse the rows that left
		l.clear(0, len(l.cells), t.pen.BG)
		l.wrapped = false
		ls[bot-n+1+i] = l
	}
	if bot-n >= top && !t.wrapping {
		// The row above the new blank rows no longer continues into the
		// next (only a wrap that scrolls continues into a new row).
		ls[bot-n].wrapped = false
	}
}

func (t *Terminal) scrollDown(n int) {
	top, bot := t.top, t.bot
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	ls := t.cur.lines
	gone := make([]*line, n)
	copy(gone, ls[bot-n+1:bot+1])
	copy(ls[top+n:], ls[top:bot-n+1])
	for i, l := range gone {
		l.clear(0, len(l.cells), t.pen.BG)
		l.wrapped = false
		ls[top+i] = l
	}
	if top > 0 {
		ls[top-1].wrapped = false
	}
	ls[bot].wrapped = false
}

// decGraphics maps 0x5f..0x7e in the DEC special graphics set.
var decGraphics = [32]rune{
	' ', '◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼',
	'⎺', '⎻', '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
}

// Text is the visible screen as plain text, one line per row, trailing
// blanks left out.
func (t *Terminal) Text() string {
	var b []byte
	for i, l := range t.cur.lines {
		if i > 0 {
			b = append(b, '\n')
		}
		end := len(l.cells)
		for end > 0 && (l.cells[end-1].Rune == 0 || l.cells[end-1].Rune == ' ') {
			end--
		}
		for _, c := range l.cells[:end] {
			if c.Attr&attrWideCont == 0 {
				b = t.appendCell(b, c.Rune)
			}
		}
	}
	return string(b)
}
