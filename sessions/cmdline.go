package sessions

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// cmdLine recovers the command line a shell echoed between its B and C
// marks (osc133.go). Line editors redraw as they go (backspace, cursor
// moves, erase to the end of the line, colours, fish's and zsh's
// suggestions), so it plays the echo as a terminal would on one line of
// cmdCells cells, from the cursor at B: what is left there when the
// command starts is its text. Only the first line counts (a continuation
// prompt follows a newline). It reads at most cmdRawMax bytes: past that,
// or in a state it cannot follow, the text is unknown rather than wrong.
type cmdLine struct {
	cells   [cmdCells]rune // 0: never written (a blank)
	n       int            // cells in use
	cur     int            // the cursor; may pass cmdCells (clipped)
	clipped bool           // something was written past cmdCells
	raw     int            // bytes read since B
	lost    bool           // too much echo: the text is unknown
	newline bool           // a line feed: the rest is not the command line

	st      lineState
	csiN    int  // the CSI's first parameter
	csiSet  bool // it has one
	csiMore bool // past the first parameter
	csiPriv bool // a private or intermediate byte: not an edit we follow
	u8      [utf8.UTFMax]byte
	u8n     int
}

type lineState uint8

const (
	lineText lineState = iota
	lineEsc
	lineCSI
	lineString    // OSC, DCS, SOS, PM, APC: skipped to BEL or ST
	lineStringEsc // an ESC inside one
)

func (l *cmdLine) reset() { *l = cmdLine{} }

func (l *cmdLine) write(b []byte) {
	if l.lost || l.newline {
		return
	}
	if l.raw+len(b) > cmdRawMax {
		l.lost = true
		return
	}
	l.raw += len(b)
	for _, c := range b {
		l.byte1(c)
		if l.newline {
			return
		}
	}
}

func (l *cmdLine) byte1(c byte) {
	switch l.st {
	case lineEsc:
		switch c {
		case '[':
			l.st, l.csiN, l.csiSet, l.csiMore, l.csiPriv = lineCSI, 0, false, false, false
		case ']', 'P', 'X', '^', '_':
			l.st = lineString
		default:
			l.st = lineText
		}
		return
	case lineCSI:
		l.csiByte(c)
		return
	case lineString:
		switch c {
		case 0x07:
			l.st = lineText
		case 0x1b:
			l.st = lineStringEsc
		}
		return
	case lineStringEsc:
		l.st = lineText
		if c != '\\' {
			l.st = lineEsc
			l.byte1(c)
		}
		return
	}
	switch {
	case c == 0x1b:
		l.st = lineEsc
	case c == '\b':
		l.cur = max(0, l.cur-1)
	case c == '\r':
		l.cur = 0
	case c == '\n':
		l.newline = true
	case c < 0x20 || c == 0x7f:
		// other controls move nothing on one line
	case c < 0x80:
		l.u8n = 0
		l.put(rune(c))
	default:
		l.utf8Byte(c)
	}
}

// utf8Byte collects a multi-byte character; a malformed one is dropped.
func (l *cmdLine) utf8Byte(c byte) {
	if utf8.RuneStart(c) {
		l.u8n = 0
	} else if l.u8n == 0 {
		return // a stray continuation byte
	}
	if l.u8n == len(l.u8) {
		l.u8n = 0
		return
	}
	l.u8[l.u8n] = c
	l.u8n++
	if !utf8.FullRune(l.u8[:l.u8n]) {
		return
	}
	r, _ := utf8.DecodeRune(l.u8[:l.u8n])
	l.u8n = 0
	if r != utf8.RuneError {
		l.put(r)
	}
}

// put writes a character at the cursor (a terminal overwrites; it does
// not insert) and moves the cursor on.
func (l *cmdLine) put(r rune) {
	// C1 controls and format characters (bidirectional overrides among
	// them) would turn the summary into something it does not say.
	if (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) || !unicode.IsPrint(r) && r != ' ' {
		return
	}
	if l.cur >= cmdCells {
		l.clipped = true
		l.cur = min(l.cur+1, 2*cmdCells)
		return
	}
	l.cells[l.cur] = r
	l.cur++
	l.n = max(l.n, l.cur)
}

func (l *cmdLine) csiByte(c byte) {
	switch {
	case c >= '0' && c <= '9':
		if !l.csiMore {
			l.csiN = min(l.csiN*10+int(c-'0'), 10000)
			l.csiSet = true
		}
	case c == ';' || c == ':':
		l.csiMore = true
	case c >= 0x20 && c < 0x40:
		l.csiPriv = true // '?', '>', '<', '=' and intermediates
	case c >= 0x40 && c <= 0x7e:
		l.st = lineText
		if !l.csiPriv {
			l.csiEdit(c)
		}
	case c == 0x1b:
		l.st = lineEsc // a terminal aborts the CSI
	case c == 0x18 || c == 0x1a:
		l.st = lineText
	}
}

// csiEdit applies the cursor moves and erasures line editors use.
func (l *cmdLine) csiEdit(final byte) {
	n := l.csiN
	if !l.csiSet || n == 0 {
		n = 1
	}
	at := min(l.cur, cmdCells)
	switch final {
	case 'C': // cursor forward
		l.cur = min(l.cur+n, 2*cmdCells)
	case 'D': // cursor back
		l.cur = max(0, l.cur-n)
	case 'K', 'J': // erase in line (in the display: the same, on one line)
		switch l.csiN {
		case 0:
			clear(l.cells[at:])
			l.n = min(l.n, at)
		case 1:
			clear(l.cells[:min(at+1, cmdCells)])
		case 2:
			clear(l.cells[:])
			l.n = 0
		}
	case 'P': // delete characters: the rest moves left
		if at < l.n {
			k := min(n, l.n-at)
			copy(l.cells[at:], l.cells[at+k:l.n])
			clear(l.cells[l.n-k : l.n])
			l.n -= k
		}
	case '@': // insert blanks: the rest moves right
		if at < l.n {
			k := min(n, cmdCells-at)
			copy(l.cells[at+k:], l.cells[at:l.n])
			clear(l.cells[at : at+k])
			l.n = min(l.n+k, cmdCells)
		}
	case 'G', 'H', 'f', 'A', 'B':
		// Moves to a column of the screen or to another line: the
		// line no longer maps to what was echoed.
		l.lost = true
	}
}

// text is the command line, or "" when it is unknown.
func (l *cmdLine) text() string {
	if l.lost {
		return ""
	}
	var b strings.Builder
	for _, r := range l.cells[:l.n] {
		if r == 0 {
			r = ' '
		}
		b.WriteRune(r)
	}
	s := strings.TrimSpace(b.String())
	if l.clipped && s != "" {
		s += "…"
	}
	return s
}
