package screen

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendSGR appends the sequence that sets pen from any previous state.
func appendSGR(dst []byte, p Pen) []byte {
	dst = append(dst, "\x1b[0"...)
	a := p.Attr
	for _, f := range [...]struct {
		bit  uint16
		code string
	}{{attrBold, ";1"}, {attrFaint, ";2"}, {attrItalic, ";3"}, {attrBlink, ";5"}, {attrInverse, ";7"}, {attrHidden, ";8"}, {attrStrike, ";9"}, {attrOverline, ";53"}} {
		if a&f.bit != 0 {
			dst = append(dst, f.code...)
		}
	}
	switch ul := (a & ulMask) >> ulShift; ul {
	case 0:
	case 1:
		dst = append(dst, ";4"...)
	default:
		dst = append(dst, ";4:"...)
		dst = strconv.AppendInt(dst, int64(ul), 10)
	}
	dst = appendColor(dst, p.FG, 30, 90, "38")
	dst = appendColor(dst, p.BG, 40, 100, "48")
	return append(dst, 'm')
}

func appendColor(dst []byte, c Color, base, bright int, ext string) []byte {
	v := int(c &^ colorKind)
	switch c & colorKind {
	case colorPalette:
		dst = append(dst, ';')
		switch {
		case v < 8:
			return strconv.AppendInt(dst, int64(base+v), 10)
		case v < 16:
			return strconv.AppendInt(dst, int64(bright+v-8), 10)
		}
		dst = append(dst, ext...)
		dst = append(dst, ";5;"...)
		return strconv.AppendInt(dst, int64(v), 10)
	case colorRGB:
		dst = append(dst, ';')
		dst = append(dst, ext...)
		dst = append(dst, ";2;"...)
		dst = strconv.AppendInt(dst, int64(v>>16), 10)
		dst = append(dst, ';')
		dst = strconv.AppendInt(dst, int64(v>>8&0xff), 10)
		dst = append(dst, ';')
		return strconv.AppendInt(dst, int64(v&0xff), 10)
	}
	return dst
}

// renderLine appends the bytes that draw l from its first column, starting
// with the pen from and ending with the default pen. A wrapped line is
// drawn to its last column so the next character wraps as it did; otherwise
// trailing blanks are left out, but at least minEnd cells are drawn (a
// line that continues a wrapped one must draw one to wrap into it).
func (t *Terminal) renderLine(dst []byte, l *line, from Pen, minEnd int) []byte {
	end := len(l.cells)
	if !l.wrapped {
		for end > minEnd && l.cells[end-1].blank() {
			end--
		}
	}
	pen := from
	plain := t.detail == detailPlain
	for i := 0; i < end; i++ {
		c := l.cells[i]
		if plain {
			c.Pen = Pen{Attr: c.Attr & (attrWide | attrWideCont)}
		}
		if !t.perRune && c.Pen == pen && c.Rune < utf8.RuneSelf {
			// A run of ASCII cells (or never-written ones) in the pen
			// already set: one byte each, written in one loop. Every line
			// that scrolls into the scrollback is drawn, and most are
			// such runs. (pen never holds attrWide or attrWideCont, so
			// neither half of a wide character is in the run.)
			j := i + 1
			for j < end && l.cells[j].Rune < utf8.RuneSelf &&
				(l.cells[j].Pen == pen || plain && l.cells[j].Attr&(attrWide|attrWideCont) == 0) {
				j++
			}
			n := len(dst)
			dst = slices.Grow(dst, j-i)[:n+j-i]
			for k, c := range l.cells[i:j] {
				b := byte(c.Rune)
				if b == 0 {
					b = ' '
				}
				dst[n+k] = b
			}
			i = j - 1
			continue
		}
		if c.Attr&attrWideCont != 0 {
			continue
		}
		cp := c.Pen
		cp.Attr &^= attrWide
		if cp != pen {
			dst = appendSGR(dst, cp)
			pen = cp
		}
		if c.Attr&attrWide != 0 && i+1 >= end {
			// The wide character's right half is cut off (only after a
			// resize): draw a blank instead.
			dst = append(dst, ' ')
			continue
		}
		if c.Rune >= clusterBase && t.detail != detailFull {
			// Its combining marks left out (see appendScreen).
			r, _ := utf8.DecodeRuneInString(t.clusters[c.Rune-clusterBase])
			dst = utf8.AppendRune(dst, r)
			continue
		}
		dst = t.appendCell(dst, c.Rune)
	}
	if pen != (Pen{}) {
		dst = append(dst, "\x1b[m"...)
	}
	if minEnd > 0 && end < len(l.cells) {
		// A wrap that scrolls fills the new row with the pen's background
		// (as terminals do): clear what this row leaves undrawn.
		dst = append(dst, "\x1b[K"...)
	}
	return dst
}
