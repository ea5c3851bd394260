package sshd

// The gateway's own ~. (contract "SSH"; issue 22 item 1). OpenSSH acts on
// its escape character only right after a newline it sent. A shell whose
// prompt asks the terminal for the cursor position (busybox and Alpine's
// ash, after every Enter) gets the terminal's answer (ESC [ row ; col R)
// through ssh after the newline and before the ~, so ssh no longer sees
// its escape and passes "~." on. escScanner sees it then: "~." after a
// newline, with only terminal reports between, detaches the client.
//
// Nothing else is delayed or changed: only a ~ right at the start of a
// line waits for the next byte, as in OpenSSH: "." detaches, "~" sends one
// ~, anything else goes on after the ~. Reports pass through at once.

// escScanner's states.
const (
	escMid       = iota // inside a line
	escLineStart        // after a newline (or at the start), reports aside
	escHeld             // a ~ at the start of a line, held
	escReport           // inside an escape sequence begun at the start of a line
)

// maxReport bounds an escape sequence taken as a report: anything longer
// is no answer a terminal gives, and the line is no longer at its start.
const maxReport = 64

// escScanner finds ~. typed at the start of a line in a client's input.
// Not safe for concurrent use: one per relay, fed in order.
type escScanner struct {
	state int
	seq   []byte // the escape sequence being read (escReport)
}

func newEscScanner() *escScanner { return &escScanner{state: escLineStart} }

// feed appends to out what p passes on to the shell, and reports whether
// p held a ~. at the start of a line: what followed it in p is dropped
// (the client detaches).
func (e *escScanner) feed(out, p []byte) ([]byte, bool) {
	for _, b := range p {
		switch e.state {
		case escHeld:
			switch b {
			case '.':
				e.state = escLineStart
				return out, true
			case '~':
				out = append(out, '~')
				e.state = escMid
				continue
			}
			out = append(out, '~')
			e.state = escMid
			out = e.mid(out, b)
		case escLineStart:
			switch b {
			case '~':
				e.state = escHeld // held until the next byte
			case 0x1b:
				e.state, e.seq = escReport, append(e.seq[:0], b)
				out = append(out, b)
			default:
				out = e.mid(out, b)
			}
		case escReport:
			out = append(out, b)
			e.seq = append(e.seq, b)
			e.report()
		default:
			out = e.mid(out, b)
		}
	}
	return out, false
}

// mid handles b inside a line.
func (e *escScanner) mid(out []byte, b byte) []byte {
	out = append(out, b)
	if b == '\r' || b == '\n' {
		e.state = escLineStart
	} else {
		e.state = escMid
	}
	return out
}

// report follows the escape sequence in e.seq: a complete terminal
// report (a CSI ending in R, c, n, t or y: cursor position, device
// attributes, status, window and mode reports; an OSC or DCS answer
// ended by BEL or ST) keeps the line at its start; any other sequence (a
// key: an arrow, a function key) ends it, as it does for OpenSSH.
func (e *escScanner) report() {
	s := e.seq
	if len(s) > maxReport {
		e.state = escMid
		return
	}
	if len(s) < 2 {
		return
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates 0x20-0x3f, then a final byte
		if len(s) == 2 {
			return
		}
		last := s[len(s)-1]
		if last >= 0x20 && last <= 0x3f {
			return
		}
		switch last {
		case 'R', 'c', 'n', 't', 'y':
			e.state = escLineStart
		default:
			e.state = escMid
		}
	case ']', 'P': // OSC, DCS: a string up to BEL or ST (ESC \)
		last := s[len(s)-1]
		if last == 0x07 || last == '\\' && s[len(s)-2] == 0x1b {
			e.state = escLineStart
		}
	default: // ESC and one byte: a key (Alt-x, SS3 O...): not a report
		e.state = escMid
	}
}
