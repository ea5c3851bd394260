package screen

import "unicode/utf8"

// Parser states, after the VT500 state machine (vt100.net/emu/dec_ansi_parser),
// trimmed to what a snapshot needs: strings other than OSC are skipped.
const (
	stGround = iota
	stEscape
	stEscInter
	stCSI
	stCSIIgnore
	stOSC
	stString // DCS, SOS, PM, APC: skipped up to ST
	stStringEsc
	stOSCEsc
)

const (
	maxParams = 32
	maxOSC    = 4096
)

type parser struct {
	state   int
	private byte // CSI private marker: '?', '>', '<', '='
	inter   byte // the (last) intermediate byte
	params  [maxParams]int
	sub     [maxParams]bool // params[i] followed a ':' (a sub-parameter)
	n       int             // params in use
	have    bool            // a digit was seen in the current parameter
	osc     []byte
	utf     [4]byte // an incomplete UTF-8 sequence
	utfN    int
}

func (t *Terminal) feed(b []byte) {
	p := &t.p
	for i := 0; i < len(b); i++ {
		c := b[i]
		if p.utfN > 0 || c >= 0x80 {
			// In every state, not only the ground one: the page's
			// terminal (xterm.js) decodes UTF-8 before it parses, so a
			// C1 control encoded in UTF-8 acts inside a sequence too.
			i = t.feedUTF8(b, i)
			continue
		}
		if p.state == stGround {
			if c >= 0x20 && c < 0x7f {
				// Fast path: a run of printable ASCII. In the ground state
				// with no partial UTF-8 character pending, such a run holds
				// no part of a sequence, so it can be written whole.
				j := i + 1
				for j < len(b) && b[j] >= 0x20 && b[j] < 0x7f {
					j++
				}
				t.printASCII(b[i:j])
				i = j - 1
				continue
			}
		}
		t.step(c)
	}
}

// feedUTF8 decodes one character starting at b[i] (possibly continuing an
// earlier partial one) and returns the index of its last byte.
func (t *Terminal) feedUTF8(b []byte, i int) int {
	p := &t.p
	if p.utfN == 0 {
		if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
			t.char(r)
			return i + size - 1
		}
		// Not a whole valid character here: take it byte by byte, so that
		// the result does not depend on where the output was split.
		if c := b[i]; c >= 0xc0 && !utf8.FullRune([]byte{c}) {
			p.utf[0], p.utfN = c, 1
			return i
		}
		t.invalid()
		return i
	}
	// Continue a partial sequence one byte at a time.
	c := b[i]
	if c&0xc0 != 0x80 { // not a continuation: the partial one was invalid
		p.utfN = 0
		t.invalid()
		return i - 1
	}
	p.utf[p.utfN] = c
	p.utfN++
	if utf8.FullRune(p.utf[:p.utfN]) {
		r, _ := utf8.DecodeRune(p.utf[:p.utfN])
		p.utfN = 0
		if r == utf8.RuneError { // an invalid sequence that looked whole
			t.invalid()
		} else {
			t.char(r)
		}
	}
	return i
}

// step advances the state machine by one byte outside the ground fast paths.
func (t *Terminal) step(c byte) {
	p := &t.p
	// Controls that act in any state but the string states.
	if p.state != stOSC && p.state != stString && p.state != stOSCEsc && p.state != stStringEsc {
		switch {
		case c == 0x1b:
			t.enter(stEscape)
			return
		case c == 0x18 || c == 0x1a: // CAN, SUB abort a sequence
			p.state = stGround
			return
		case c < 0x20:
			t.control(c)
			return
		}
	}
	switch p.state {
	case stGround:
		if c == 0x7f {
			return
		}
		t.print(rune(c))
	case stEscape:
		switch {
		case c >= 0x20 && c <= 0x2f:
			p.inter = c
			p.state = stEscInter
		case c == '[':
			t.enter(stCSI)
		case c == ']':
			t.enter(stOSC)
		case c == 'P' || c == 'X' || c == '^' || c == '_':
			p.state = stString
		case c == 0x7f:
		default:
			p.state = stGround
			t.esc(c)
		}
	case stEscInter:
		switch {
		case c >= 0x20 && c <= 0x2f:
			p.inter = c
		case c == 0x7f:
		default:
			p.state = stGround
			t.esc(c)
		}
	case stCSI:
		switch {
		case c >= '0' && c <= '9':
			if p.n == 0 {
				p.n = 1
			}
			if v := &p.params[p.n-1]; *v < 65535 {
				*v = *v*10 + int(c-'0')
			}
			p.have = true
		case c == ';' || c == ':':
			if p.n == 0 {
				p.n = 1
			}
			if p.n == maxParams {
				p.state = stCSIIgnore
				return
			}
			p.sub[p.n] = c == ':'
			p.n++
		case c >= '<' && c <= '?':
			if p.n > 0 || p.inter != 0 || p.private != 0 {
				p.state = stCSIIgnore
				return
			}
			p.private = c
		case c >= 0x20 && c <= 0x2f:
			p.inter = c
		case c >= 0x40 && c <= 0x7e:
			p.state = stGround
			t.csi(c)
		}
	case stCSIIgnore:
		if c >= 0x40 && c <= 0x7e {
			p.state = stGround
		}
	case stOSC:
		switch c {
		case 0x07:
			p.state = stGround
			t.oscEnd()
		case 0x1b:
			p.state = stOSCEsc
		case 0x18, 0x1a:
			p.state = stGround
		default:
			if len(p.osc) < maxOSC {
				p.osc = append(p.osc, c)
			}
		}
	case stOSCEsc:
		// ST ends the string; any other ESC aborts it and starts a new
		// sequence, as terminals parse it.
		if c == '\\' {
			p.state = stGround
			t.oscEnd()
			return
		}
		t.enter(stEscape)
		t.step(c)
	case stString:
		switch c {
		case 0x1b:
			p.state = stStringEsc
		case 0x18, 0x1a:
			p.state = stGround
		}
	case stStringEsc:
		if c == '\\' {
			p.state = stGround
			return
		}
		t.enter(stEscape)
		t.step(c)
	}
}

func (t *Terminal) enter(state int) {
	p := &t.p
	p.state = state
	// Only the first n parameters are ever set (a parameter past n is
	// never written), so only they need clearing: every escape sequence
	// enters here.
	n := p.n
	if t.perRune {
		n = maxParams
	}
	clear(p.params[:n])
	clear(p.sub[:n])
	p.private, p.inter, p.n, p.have = 0, 0, 0, false
	p.osc = p.osc[:0]
}

// param returns parameter i, or def when it is absent or 0.
func (p *parser) param(i, def int) int {
	if i >= p.n || p.params[i] == 0 {
		return def
	}
	return p.params[i]
}

func (t *Terminal) control(c byte) {
	switch c {
	case '\b':
		if t.pendingWrap {
			t.pendingWrap = false
		} else if t.x > 0 {
			t.x--
		}
	case '\t':
		t.tab(1)
	case '\n', '\v', '\f':
		t.pendingWrap = false
		t.index()
		if t.newline {
			t.x = 0
		}
	case '\r':
		t.x, t.pendingWrap = 0, false
	case 0x0e:
		t.gl = 1
	case 0x0f:
		t.gl = 0
	}
}

func (t *Terminal) tab(n int) {
	t.pendingWrap = false
	for ; n > 0 && t.x < t.w-1; n-- {
		t.x++
		for t.x < t.w-1 && !t.tabs[t.x] {
			t.x++
		}
	}
}

func (t *Terminal) backTab(n int) {
	t.pendingWrap = false
	for ; n > 0 && t.x > 0; n-- {
		t.x--
		for t.x > 0 && !t.tabs[t.x] {
			t.x--
		}
	}
}

func (t *Terminal) esc(c byte) {
	p := &t.p
	switch p.inter {
	case 0:
		switch c {
		case '7':
			t.saveCursor()
		case '8':
			t.restoreCursor()
		case 'D':
			t.pendingWrap = false
			t.index()
		case 'E':
			t.pendingWrap = false
			t.x = 0
			t.index()
		case 'M':
			t.pendingWrap = false
			t.reverseIndex()
		case 'H':
			t.tabs[t.x] = true
		case 'c':
			t.reset()
		case '=':
			t.appKeypad = true
		case '>':
			t.appKeypad = false
		}
	case '(', ')':
		if c == '0' || c == 'B' || c == 'A' || c == 'U' {
			cs := byte('B')
			if c == '0' {
				cs = '0'
			}
			t.charset[p.inter-'('] = cs
		}
	case '#':
		if c == '8' { // DECALN: fill the screen with E
			for _, l := range t.cur.lines {
				for i := range l.cells {
					l.cells[i] = Cell{Rune: 'E'}
				}
				l.wrapped = false
			}
			t.top, t.bot, t.x, t.y, t.pendingWrap = 0, t.h-1, 0, 0, false
		}
	}
}

func (t *Terminal) oscEnd() {
	s := t.p.osc
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ';' {
		return
	}
	switch string(s[:i]) {
	case "0", "2":
		t.title = cleanTitle(s[i+1:])
	}
}

// cleanTitle keeps a title's printable characters: it is sent back to
// clients, so it must not carry controls.
func cleanTitle(b []byte) string {
	out := make([]rune, 0, len(b))
	for _, r := range string(b) {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

func (t *Terminal) saveCursor() {
	t.cur.saved = cursor{x: t.x, y: t.y, pen: t.pen, origin: t.origin, charset: t.charset, gl: t.gl, valid: true}
}

func (t *Terminal) restoreCursor() {
	s := t.cur.saved
	if !s.valid {
		s = cursor{charset: [2]byte{'B', 'B'}}
	}
	t.x, t.y = min(s.x, t.w-1), min(s.y, t.h-1)
	t.pen, t.origin, t.charset, t.gl = s.pen, s.origin, s.charset, s.gl
	t.pendingWrap = false
}
