package screen

import (
	"fmt"
	"strings"
)

// dump describes everything a snapshot restores, for comparing two
// terminals; blank cells compare equal however they became blank.
func dump(t *Terminal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "size %dx%d alt %d cursor %d,%d wrap %v pen %+v region %d-%d\n", t.w, t.h, t.altMode, t.x, t.y, t.pendingWrap, t.pen, t.top, t.bot)
	fmt.Fprintf(&b, "modes %+v charset %q gl %d title %q\n", t.modes, t.charset[:], t.gl, t.title)
	saved := func(name string, c cursor) {
		if c.valid {
			fmt.Fprintf(&b, "%s saved %d,%d pen %+v origin %v charset %q gl %d\n", name, c.x, c.y, c.pen, c.origin, c.charset[:], c.gl)
		} else {
			fmt.Fprintf(&b, "%s saved none\n", name)
		}
	}
	if t.altMode == 1049 || t.altMode == 0 {
		saved("main", t.main.saved)
	}
	if t.altMode != 0 {
		saved("alt", t.alt.saved)
	}
	screen := func(name string, ls []*line) {
		fmt.Fprintf(&b, "-- %s\n", name)
		for i, l := range ls {
			for _, c := range l.cells {
				r := c.Rune
				if r == 0 {
					r = ' '
				}
				if c.Attr&attrWideCont != 0 {
					b.WriteString("|")
					continue
				}
				b.WriteString(t.cellText(r))
				if c.Pen != (Pen{}) {
					fmt.Fprintf(&b, "{%x,%x,%x}", c.FG, c.BG, c.Attr)
				}
			}
			if l.wrapped && i < len(ls)-1 {
				b.WriteString(" ⏎")
			}
			b.WriteString("\n")
		}
	}
	screen("main", t.main.lines)
	if t.altMode != 0 {
		screen("alt", t.alt.lines)
	}
	return b.String()
}
