package screen

import "strconv"

func (t *Terminal) csi(final byte) {
	p := &t.p
	if p.private == '?' && p.inter == 0 {
		switch final {
		case 'h', 'l':
			for i := 0; i < max(p.n, 1); i++ {
				t.decMode(p.params[i], final == 'h')
			}
		case 'J':
			t.eraseDisplay(p.param(0, 0))
		case 'K':
			t.eraseLine(p.param(0, 0))
		case 'n':
			if p.param(0, 0) == 6 { // DECXCPR
				x, y := t.reportedCursor()
				t.reply("\x1b[?" + strconv.Itoa(y) + ";" + strconv.Itoa(x) + ";1R")
			}
		}
		return
	}
	if p.private == '>' {
		if final == 'c' && p.param(0, 0) == 0 { // DA2
			t.reply("\x1b[>1;10;0c")
		}
		return
	}
	if p.private != 0 {
		return
	}
	switch p.inter {
	case ' ':
		if final == 'q' { // DECSCUSR
			t.cursorStyle = min(p.param(0, 0), 6)
		}
		return
	case '!':
		if final == 'p' {
			t.softReset()
		}
		return
	case 0:
	default:
		return
	}
	n := p.param(0, 1)
	switch final {
	case '@': // ICH
		t.pendingWrap = false
		l := t.cur.lines[t.y]
		splitAt(l, t.x)
		n = min(n, t.w-t.x)
		copy(l.cells[t.x+n:], l.cells[t.x:])
		l.clear(t.x, t.x+n, t.pen.BG)
		t.fixWideEnd(l)
	case 'A':
		t.cursorUp(n)
	case 'B', 'e':
		t.cursorDown(n)
	case 'C', 'a':
		t.moveTo(t.x+n, t.y)
	case 'D':
		t.moveTo(t.x-n, t.y)
	case 'E':
		t.cursorDown(n)
		t.x = 0
	case 'F':
		t.cursorUp(n)
		t.x = 0
	case 'G', '`':
		t.moveTo(n-1, t.y)
	case 'H', 'f':
		t.cup(p.param(1, 1)-1, n-1)
	case 'I':
		t.tab(n)
	case 'Z':
		t.backTab(n)
	case 'J':
		t.eraseDisplay(p.param(0, 0))
	case 'K':
		t.eraseLine(p.param(0, 0))
	case 'L':
		if t.y >= t.top && t.y <= t.bot {
			top := t.top
			t.top = t.y
			t.scrollDown(n)
			t.top = top
			t.x, t.pendingWrap = 0, false
		}
	case 'M':
		if t.y >= t.top && t.y <= t.bot {
			t.scrollUpIn(t.cur, t.y, t.bot, n)
			t.x, t.pendingWrap = 0, false
		}
	case 'P': // DCH
		t.pendingWrap = false
		l := t.cur.lines[t.y]
		splitAt(l, t.x)
		n = min(n, t.w-t.x)
		splitAt(l, t.x+n)
		copy(l.cells[t.x:], l.cells[t.x+n:])
		l.clear(t.w-n, t.w, t.pen.BG)
	case 'S':
		t.scrollUp(n)
	case 'T':
		if p.n <= 1 {
			t.scrollDown(n)
		}
	case 'X': // ECH
		t.pendingWrap = false
		l := t.cur.lines[t.y]
		t.clearWide(l, t.x)
		end := min(t.x+n, t.w)
		if end < t.w {
			t.clearWide(l, end-1)
		}
		l.clear(t.x, end, t.pen.BG)
	case 'b': // REP
		if t.x > 0 || t.pendingWrap {
			x := t.x
			if !t.pendingWrap {
				x--
			}
			r := t.cur.lines[t.y].cells[x].Rune
			if r > 0 && r < clusterBase && t.cur.lines[t.y].cells[x].Attr&attrWideCont == 0 {
				for range min(n, t.w) { // bounded: a few bytes must not cost a screenful
					t.print(r)
				}
			}
		}
	case 'c':
		if p.param(0, 0) == 0 { // DA1
			t.reply("\x1b[?62;22c")
		}
	case 'd':
		t.cup(t.x, n-1)
	case 'g':
		switch p.param(0, 0) {
		case 0:
			t.tabs[t.x] = false
		case 3:
			clear(t.tabs)
		}
	case 'h', 'l':
		for i := 0; i < max(p.n, 1); i++ {
			switch p.params[i] {
			case 4:
				t.insert = final == 'h'
			case 20:
				t.newline = final == 'h'
			}
		}
	case 'm':
		t.sgr()
	case 'n':
		switch p.param(0, 0) {
		case 5:
			t.reply("\x1b[0n")
		case 6:
			x, y := t.reportedCursor()
			t.reply("\x1b[" + strconv.Itoa(y) + ";" + strconv.Itoa(x) + "R")
		}
	case 'r':
		top, bot := p.param(0, 1)-1, p.param(1, t.h)-1
		bot = min(bot, t.h-1)
		if top < bot {
			t.top, t.bot = top, bot
			t.cup(0, 0)
		}
	case 's':
		t.saveCursor()
	case 'u':
		t.restoreCursor()
	}
}

func (t *Terminal) reply(s string) {
	if t.Reply != nil {
		t.Reply([]byte(s))
	}
}

// reportedCursor is the cursor as a position report gives it (1-based,
// relative to the scroll region in origin mode).
func (t *Terminal) reportedCursor() (x, y int) {
	y = t.y + 1
	if t.origin {
		y -= t.top
	}
	return t.x + 1, y
}

func (t *Terminal) moveTo(x, y int) {
	t.x = max(0, min(x, t.w-1))
	t.y = max(0, min(y, t.h-1))
	t.pendingWrap = false
}

// cup moves to column x, row y (0-based), relative to the region in origin mode.
func (t *Terminal) cup(x, y int) {
	if t.origin {
		y = max(0, min(y+t.top, t.bot))
	}
	t.moveTo(x, y)
}

func (t *Terminal) cursorUp(n int) {
	limit := 0
	if t.y >= t.top {
		limit = t.top
	}
	t.moveTo(t.x, max(t.y-n, limit))
}

func (t *Terminal) cursorDown(n int) {
	limit := t.h - 1
	if t.y <= t.bot {
		limit = t.bot
	}
	t.moveTo(t.x, min(t.y+n, limit))
}

func (t *Terminal) eraseDisplay(mode int) {
	t.pendingWrap = false
	ls := t.cur.lines
	switch mode {
	case 0:
		t.eraseLine(0)
		for _, l := range ls[t.y+1:] {
			l.clear(0, t.w, t.pen.BG)
			l.wrapped = false
		}
		ls[t.y].wrapped = false
	case 1:
		t.eraseLine(1)
		for _, l := range ls[:t.y] {
			l.clear(0, t.w, t.pen.BG)
			l.wrapped = false
		}
	case 2:
		for _, l := range ls {
			l.clear(0, t.w, t.pen.BG)
			l.wrapped = false
		}
	case 3:
		t.sb.reset()
	}
}

func (t *Terminal) eraseLine(mode int) {
	t.pendingWrap = false
	l := t.cur.lines[t.y]
	switch mode {
	case 0:
		t.clearWide(l, t.x)
		l.clear(t.x, t.w, t.pen.BG)
		l.wrapped = false
	case 1:
		t.clearWide(l, t.x)
		l.clear(0, t.x+1, t.pen.BG)
	case 2:
		l.clear(0, t.w, t.pen.BG)
		l.wrapped = false
	}
}

func (t *Terminal) softReset() {
	t.modes = modes{mouse: t.mouse, mouseEnc: t.mouseEnc, focus: t.focus, paste: t.paste, reverse: t.reverse, cursorStyle: t.cursorStyle}
	t.pen = Pen{}
	t.top, t.bot = 0, t.h-1
	t.charset, t.gl = [2]byte{'B', 'B'}, 0
	t.cur.saved = cursor{}
	t.pendingWrap = false
}

func (t *Terminal) decMode(mode int, on bool) {
	switch mode {
	case 1:
		t.appCursor = on
	case 5:
		t.reverse = on
	case 6:
		t.origin = on
		t.cup(0, 0)
	case 7:
		t.noAutowrap = !on
		if !on {
			t.pendingWrap = false
		}
	case 25:
		t.cursorHidden = !on
	case mouseX10, mouseNormal, mouseButton, mouseAny:
		if on {
			t.mouse = mode
		} else if t.mouse == mode {
			t.mouse = 0
		}
	case encUTF8, encSGR, encURXVT, encSGRPixels:
		if on {
			t.mouseEnc = mode
		} else if t.mouseEnc == mode {
			t.mouseEnc = 0
		}
	case 1004:
		t.focus = on
	case 2004:
		t.paste = on
	case 47, 1047, 1049:
		t.altScreen(mode, on)
	case 1048:
		if on {
			t.saveCursor()
		} else {
			t.restoreCursor()
		}
	}
}

func (t *Terminal) altScreen(mode int, on bool) {
	if on == (t.altMode != 0) {
		return
	}
	if on {
		if mode == 1049 {
			t.saveCursor()
		}
		if t.alt.lines == nil {
			t.alt.lines = newLines(t.w, t.h)
		}
		t.cur, t.altMode = &t.alt, mode
		if mode == 1049 || mode == 1047 {
			for _, l := range t.alt.lines {
				l.clear(0, t.w, t.pen.BG)
				l.wrapped = false
			}
		}
		return
	}
	if mode == 1047 {
		for _, l := range t.alt.lines {
			l.clear(0, t.w, t.pen.BG)
			l.wrapped = false
		}
	}
	t.cur, t.altMode = &t.main, 0
	if mode != 47 {
		t.alt.lines = nil // cleared on the next switch anyway: free it
	}
	if mode == 1049 {
		t.restoreCursor()
	}
}

func (t *Terminal) sgr() {
	p := &t.p
	if p.n == 0 {
		t.pen = Pen{}
		return
	}
	for i := 0; i < p.n; i++ {
		v := p.params[i]
		switch {
		case v == 0:
			t.pen = Pen{}
		case v == 1:
			t.pen.Attr |= attrBold
		case v == 2:
			t.pen.Attr |= attrFaint
		case v == 3:
			t.pen.Attr |= attrItalic
		case v == 4:
			style := uint16(1)
			if i+1 < p.n && p.sub[i+1] {
				i++
				style = uint16(min(p.params[i], 5))
			}
			t.pen.Attr = t.pen.Attr&^ulMask | style<<ulShift
		case v == 5 || v == 6:
			t.pen.Attr |= attrBlink
		case v == 7:
			t.pen.Attr |= attrInverse
		case v == 8:
			t.pen.Attr |= attrHidden
		case v == 9:
			t.pen.Attr |= attrStrike
		case v == 21:
			t.pen.Attr = t.pen.Attr&^ulMask | 2<<ulShift
		case v == 22:
			t.pen.Attr &^= attrBold | attrFaint
		case v == 23:
			t.pen.Attr &^= attrItalic
		case v == 24:
			t.pen.Attr &^= ulMask
		case v == 25:
			t.pen.Attr &^= attrBlink
		case v == 27:
			t.pen.Attr &^= attrInverse
		case v == 28:
			t.pen.Attr &^= attrHidden
		case v == 29:
			t.pen.Attr &^= attrStrike
		case v == 53:
			t.pen.Attr |= attrOverline
		case v == 55:
			t.pen.Attr &^= attrOverline
		case v >= 30 && v <= 37:
			t.pen.FG = colorPalette | Color(v-30)
		case v >= 40 && v <= 47:
			t.pen.BG = colorPalette | Color(v-40)
		case v >= 90 && v <= 97:
			t.pen.FG = colorPalette | Color(v-90+8)
		case v >= 100 && v <= 107:
			t.pen.BG = colorPalette | Color(v-100+8)
		case v == 39:
			t.pen.FG = 0
		case v == 49:
			t.pen.BG = 0
		case v == 38 || v == 48 || v == 58:
			var c Color
			c, i = t.extColor(i)
			if v == 38 {
				t.pen.FG = c
			} else if v == 48 {
				t.pen.BG = c
			}
		}
		// Skip sub-parameters nobody above consumed.
		for i+1 < p.n && p.sub[i+1] {
			i++
		}
	}
}

// extColor parses the colour after a 38/48/58 at params[i] in either the
// ';' or the ':' form, returning it and the index of its last parameter.
func (t *Terminal) extColor(i int) (Color, int) {
	p := &t.p
	colon := i+1 < p.n && p.sub[i+1]
	if i+1 >= p.n {
		return 0, i
	}
	switch p.params[i+1] {
	case 5:
		if i+2 < p.n {
			return colorPalette | Color(min(p.params[i+2], 255)), i + 2
		}
	case 2:
		j := i + 2
		// The ':' form may carry a colour-space id: 38:2:ID:R:G:B.
		if colon && i+5 < p.n && p.sub[i+5] {
			j++
		}
		if j+2 < p.n {
			r, g, b := min(p.params[j], 255), min(p.params[j+1], 255), min(p.params[j+2], 255)
			return colorRGB | Color(r<<16|g<<8|b), j + 2
		}
	}
	return 0, p.n - 1
}
