package screen

// Color is a cell's foreground or background colour: 0 is the terminal's
// default, colorPalette|n one of the 256 indexed colours, colorRGB|0xRRGGBB
// a direct colour.
type Color uint32

const (
	colorPalette Color = 1 << 24
	colorRGB     Color = 2 << 24
	colorKind    Color = 0xff << 24
)

// Attribute bits of a Pen. The underline style (SGR 4:n) takes three bits.
const (
	attrBold uint16 = 1 << iota
	attrFaint
	attrItalic
	attrBlink
	attrInverse
	attrHidden
	attrStrike
	attrOverline
	attrWide     // the cell holds a double-width character
	attrWideCont // the cell is the right half of the wide character before it

	ulShift        = 12
	ulMask  uint16 = 7 << ulShift
)

// Pen is the graphic rendition text is written with.
type Pen struct {
	FG, BG Color
	Attr   uint16
}

// Cell is one character cell. Rune 0 is a cell never written (shown as a
// blank); runes from clusterBase on index Terminal.clusters (a character
// with combining marks).
type Cell struct {
	Rune rune
	Pen
}

const clusterBase = 0x110000

// line is one row of cells; wrapped says the text continues on the next row
// (the row was filled and auto-wrapped), so a redraw keeps it one line.
type line struct {
	cells   []Cell
	wrapped bool
}

func newLine(w int, bg Color) *line {
	l := &line{cells: make([]Cell, w)}
	if bg != 0 {
		for i := range l.cells {
			l.cells[i].BG = bg
		}
	}
	return l
}

func (l *line) clear(from, to int, bg Color) {
	if bg == 0 {
		// A blank cell is the zero Cell: clear it as memory (every row
		// that scrolls is cleared).
		if to = min(to, len(l.cells)); from < to {
			clear(l.cells[from:to])
		}
		return
	}
	c := Cell{Pen: Pen{BG: bg}}
	for i := from; i < to && i < len(l.cells); i++ {
		l.cells[i] = c
	}
}

// blank reports whether a cell shows nothing: an empty or space cell with
// no colour or attribute (a trailing run of them is not drawn).
func (c Cell) blank() bool {
	return (c.Rune == 0 || c.Rune == ' ') && c.Pen == Pen{}
}
