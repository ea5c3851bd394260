package screen

// printASCII writes a run of printable ASCII (0x20-0x7e) at the cursor, as
// print does one character at a time, in one loop per row: ordinary output
// is mostly such runs, and the per-character path (charset check, wrap
// check, clearWide, width lookup) cost most of the emulator's time.
func (t *Terminal) printASCII(s []byte) {
	if t.perRune || t.charset[t.gl] == '0' || t.insert || t.noAutowrap {
		// DEC graphics maps part of ASCII, insert mode shifts the row and
		// without autowrap the last column is overwritten: rare enough to
		// keep to the general path.
		for _, c := range s {
			t.print(rune(c))
		}
		return
	}
	for len(s) > 0 {
		if t.pendingWrap {
			t.wrap()
			t.pendingWrap = false
		}
		cells := t.cur.lines[t.y].cells
		n := min(len(s), t.w-t.x)
		x, end := t.x, t.x+n-1
		// Overwriting one half of a wide character blanks the other half
		// (keeping its background), as clearWide does per character; inside
		// the run both halves are overwritten, so only its two ends matter.
		if x > 0 && cells[x].Attr&attrWideCont != 0 {
			cells[x-1] = Cell{Pen: Pen{BG: cells[x-1].BG}}
		}
		if end+1 < len(cells) && cells[end].Attr&attrWide != 0 {
			cells[end+1] = Cell{Pen: Pen{BG: cells[end+1].BG}}
		}
		pen := t.pen
		row := cells[x : x+n]
		for i, c := range s[:n] {
			row[i] = Cell{Rune: rune(c), Pen: pen}
		}
		s = s[n:]
		t.x += n
		if t.x >= t.w {
			t.x = t.w - 1
			t.pendingWrap = true
		}
	}
}
