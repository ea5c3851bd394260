package sanitize

import "unicode/utf8"

// The states of the DEC/xterm VT500 parser (vt100.net/emu/dec_ansi_parser),
// as xterm.js and charmbracelet/x/ansi implement it.
type vtState uint8

const (
	vtGround vtState = iota
	vtEscape
	vtEscapeIntermediate
	vtCSIEntry
	vtCSIParam
	vtCSIIntermediate
	vtCSIIgnore
	vtDCSEntry
	vtDCSParam
	vtDCSIntermediate
	vtDCSPassthrough
	vtDCSIgnore
	vtOSCString
	vtSOSPMAPCString
)

func (st vtState) isString() bool {
	return st == vtOSCString || st == vtSOSPMAPCString || st == vtDCSPassthrough || st == vtDCSIgnore
}

// tokNonASCII is the token class of a printable character outside ASCII (a
// UTF-8 character from U+00A0 on, or a byte that is not valid UTF-8 and not
// in 0x80–0x9F).
const tokNonASCII = 0x100

const (
	esc  = 0x1b
	bel  = 0x07
	can  = 0x18
	sub  = 0x1a
	enq  = 0x05
	c1ST = 0x9c // the C1 string terminator
)

// stripper runs the parser over the input and appends what it keeps to out.
// Bytes are appended as they are read; a sequence found to be a query is cut
// back off out when it ends.
type stripper struct {
	out  []byte
	base int // where the output for the client starts (see run)
	// uncertain: since the last ESC, CAN or SUB, the client was sent a byte
	// terminals read differently (only matters before the resume point).
	uncertain bool
	state     vtState

	// The current sequence, from its introducer (ESC or a C1 control) on.
	prev   vtState // the state before the introducer (what it ended or abandoned)
	seqOut int     // len(out) before the introducer
	kind   byte    // '[' ']' 'P' 'X' '^' '_' once known
	prefix byte    // private marker 0x3C–0x3F right after a CSI or DCS introducer
	params []byte  // CSI/DCS parameter bytes 0x30–0x3B
	inter  []byte  // intermediate bytes 0x20–0x2F
	final  byte    // DCS final byte (the hook), 0 before it
	body   []byte  // OSC and APC data, without the C0 controls OSC ignores
	apcBEL int     // len(body) at the first BEL inside an APC, -1 before one
	exec   []byte  // C0 controls executed inside a CSI or escape sequence
	dropST bool    // in vtEscape: this ESC ended a removed string, so an ST here goes too
}

// run parses b and appends what it keeps to out. The client already holds
// b[:split] (a resume): those bytes are parsed for the state they leave,
// and base is where the output for b[split:] starts.
func (s *stripper) run(b []byte, split int) {
	based := split == 0
	for i := 0; i < len(b); {
		if !based && i >= split {
			s.setBase()
			based = true
		}
		c := b[i]
		if s.state == vtGround && c >= 0x20 && c < 0x7f {
			// Fast path: a run of printable ASCII in the ground state.
			limit := len(b)
			if !based {
				limit = split
			}
			j := i + 1
			for j < limit && b[j] >= 0x20 && b[j] < 0x7f {
				j++
			}
			s.out = append(s.out, b[i:j]...)
			i = j
			continue
		}
		if c < 0x80 {
			if c != enq { // ENQ asks for the answerback message
				s.token(int(c), b[i:i+1])
			}
			i++
			continue
		}
		if !utf8.FullRune(b[i:]) {
			// A character cut by the end of the buffer: live output
			// completes it.
			if !based {
				s.base, based = len(s.out)+split-i, true
			}
			s.out = append(s.out, b[i:]...)
			break
		}
		r, n := utf8.DecodeRune(b[i:])
		if !based && i+n > split && s.uncertain {
			// The client holds the first bytes of this character in an
			// unknown state: after the CANs its rest would be stray.
			s.setBase()
			based = true
			i += n
			continue
		}
		outBefore := len(s.out)
		straddle := !based && i+n > split
		if straddle {
			// The client holds the first bytes of this character: it gets
			// the rest if the character is kept as it is, and a removal
			// reaching back to them cancels with CAN (see remove).
			s.base, based = outBefore+split-i, true
		}
		switch {
		case r == utf8.RuneError && n == 1 && c < 0xA0:
			// A raw C1 byte outside UTF-8: dropped (see StripQueries).
			// The client holds it if it is before split, and may have
			// acted on it.
			s.uncertain = s.uncertain || !based
		case r == utf8.RuneError && n == 1 && c >= 0xC2 && c <= 0xF4:
			// A lead byte without its continuation bytes: dropped, as
			// some parsers (charmbracelet/x/ansi) take the next bytes as
			// its continuation whatever they are, and so could read the
			// continuation byte of the next character as a C1 control.
			s.uncertain = s.uncertain || !based
		case r == utf8.RuneError && n == 1:
			s.token(tokNonASCII, b[i:i+1])
		case r < 0xA0:
			s.token(int(r), b[i:i+n]) // a C1 control encoded in UTF-8
		default:
			s.token(tokNonASCII, b[i:i+n])
		}
		if straddle && len(s.out) < s.base {
			s.base = len(s.out) // dropped: nothing of it is sent
		}
		i += n
	}
	if !based {
		s.setBase()
	}
	s.finish()
}

// setBase marks the resume point at the end of the output. When the client
// holds a byte that terminals read differently (a raw C1, a C1 inside a
// string, a lead byte without its continuation), its terminal may be inside
// a sequence the parser does not see: CAN cancels whatever it is in, and the
// parser starts over from ground.
func (s *stripper) setBase() {
	s.base = len(s.out)
	if s.uncertain {
		// Three, for a parser still collecting a character's
		// continuation bytes.
		s.out = append(s.out, can, can, can)
		s.state = vtGround
		s.dropST = false
	}
}

// token advances the parser by one character: c is its code (0x00–0x9F) or
// tokNonASCII, tok its bytes.
func (s *stripper) token(c int, tok []byte) {
	switch {
	case c == esc:
		s.uncertain = false // ESC starts a sequence in every reading
		removed := s.state.isString() && s.endString()
		s.begin(vtEscape, 0, tok)
		s.dropST = removed // ESC \ was the removed string's terminator
		return
	case c == can || c == sub: // cancel any sequence
		s.uncertain = false
		if s.state.isString() {
			s.endString()
		}
		s.out = append(s.out, tok...)
		s.state = vtGround
		return
	case c >= 0x80 && c < 0xA0:
		s.c1(byte(c), tok)
		return
	}
	switch s.state {
	case vtGround:
		s.out = append(s.out, tok...)
	case vtEscape, vtEscapeIntermediate:
		s.escape(c, tok)
	case vtCSIEntry, vtCSIParam, vtCSIIntermediate, vtCSIIgnore:
		s.csi(c, tok)
	case vtDCSEntry, vtDCSParam, vtDCSIntermediate:
		s.dcsHeader(c, tok)
	case vtDCSPassthrough, vtDCSIgnore:
		s.out = append(s.out, tok...)
	case vtOSCString:
		s.out = append(s.out, tok...)
		switch {
		case c == bel:
			s.endString()
			s.state = vtGround
		case c >= 0x20: // C0 controls are ignored inside an OSC
			s.body = append(s.body, tok...)
		}
	case vtSOSPMAPCString:
		s.out = append(s.out, tok...)
		if c == bel && s.apcBEL < 0 {
			s.apcBEL = len(s.body)
		}
		s.body = append(s.body, tok...)
	}
}

// c1 handles a C1 control, which acts anywhere except inside a string.
func (s *stripper) c1(c byte, tok []byte) {
	if s.state.isString() {
		if c == c1ST {
			s.out = append(s.out, tok...)
			s.endString()
			s.state = vtGround
		}
		// Any other C1 inside a string is dropped (see StripQueries).
		s.uncertain = true // only read before the resume point
		return
	}
	switch c {
	case 0x9b:
		s.begin(vtCSIEntry, '[', tok)
	case 0x9d:
		s.begin(vtOSCString, ']', tok)
	case 0x90:
		s.begin(vtDCSEntry, 'P', tok)
	case 0x98:
		s.begin(vtSOSPMAPCString, 'X', tok)
	case 0x9e:
		s.begin(vtSOSPMAPCString, '^', tok)
	case 0x9f:
		s.begin(vtSOSPMAPCString, '_', tok)
	case 0x9a:
		// DECID (the 8-bit ESC Z) asks for the device attributes: dropped.
	default: // executed; ends any partial sequence
		s.out = append(s.out, tok...)
		s.state = vtGround
	}
}

// begin starts a sequence at its introducer.
func (s *stripper) begin(st vtState, kind byte, tok []byte) {
	s.prev = s.state
	s.seqOut = len(s.out)
	s.out = append(s.out, tok...)
	s.state = st
	s.kind = kind
	s.prefix, s.final, s.apcBEL = 0, 0, -1
	s.params, s.inter, s.body, s.exec = s.params[:0], s.inter[:0], s.body[:0], s.exec[:0]
	s.dropST = false
}

// remove cuts the current sequence off the output and leaves the parser in
// the ground state, as the sequence's end would have.
func (s *stripper) remove() {
	if s.seqOut < s.base {
		// The client already holds the start of this sequence (a resume
		// cut it): CAN cancels it there without dispatching it.
		s.out = append(s.out[:s.base], can)
		s.state = vtGround
		s.dropST = false
		return
	}
	s.out = s.out[:s.seqOut]
	if s.prev != vtGround {
		// The introducer also ended a string or abandoned a partial
		// sequence: ST does the same without being a query.
		s.out = append(s.out, esc, '\\')
	}
	s.out = append(s.out, s.exec...)
	s.state = vtGround
	s.dropST = false
}

func (s *stripper) escape(c int, tok []byte) {
	s.out = append(s.out, tok...)
	switch {
	case c < 0x20:
		s.exec = append(s.exec, byte(c))
		return
	case c == 0x7f:
		return
	case c == tokNonASCII: // not part of any escape sequence: malformed
		s.remove()
		return
	case c < 0x30:
		s.inter = append(s.inter, byte(c))
		s.state = vtEscapeIntermediate
		s.dropST = false
		return
	}
	// A C0 control inside corrupts the final byte in some parsers (see csi).
	drop := s.dropST && c == '\\' || len(s.exec) > 0
	s.dropST = false
	if s.state == vtEscape {
		switch c {
		case '[':
			s.state, s.kind = vtCSIEntry, '['
			return
		case ']':
			s.state, s.kind = vtOSCString, ']'
			return
		case 'P':
			s.state, s.kind = vtDCSEntry, 'P'
			return
		case 'X', '^', '_':
			s.state, s.kind = vtSOSPMAPCString, byte(c)
			return
		case 'Z': // DECID
			drop = true
		}
	}
	if drop {
		s.remove()
		return
	}
	s.state = vtGround
}

func (s *stripper) csi(c int, tok []byte) {
	s.out = append(s.out, tok...)
	switch {
	case c < 0x20:
		s.exec = append(s.exec, byte(c))
	case c == 0x7f:
	case c == tokNonASCII:
		s.remove()
	case s.state == vtCSIIgnore:
		if c >= 0x40 {
			s.remove() // a VT500 parser ignores it; lenient ones may not
		}
	case c < 0x30:
		s.inter = append(s.inter, byte(c))
		s.state = vtCSIIntermediate
	case c < 0x3c && s.state != vtCSIIntermediate: // digits, ':' and ';'
		s.params = append(s.params, byte(c))
		s.state = vtCSIParam
	case c < 0x40 && s.state == vtCSIEntry:
		s.prefix = byte(c)
		s.state = vtCSIParam
	case c < 0x40:
		s.state = vtCSIIgnore
	default:
		// A C0 control inside: charmbracelet/x/ansi (and so x/vt) ORs it
		// into the final byte (ESC [ SOH b reads as DA1), so such a CSI,
		// which no program means, goes; the control itself stays.
		if len(s.exec) > 0 || isCSIQuery(s.prefix, s.params, s.inter, byte(c)) {
			s.remove()
			return
		}
		s.state = vtGround
	}
}

func (s *stripper) dcsHeader(c int, tok []byte) {
	s.out = append(s.out, tok...)
	switch {
	case c < 0x20 || c == 0x7f: // ignored
	case c == tokNonASCII:
		s.remove()
	case c < 0x30:
		s.inter = append(s.inter, byte(c))
		s.state = vtDCSIntermediate
	case c < 0x3c && s.state != vtDCSIntermediate:
		s.params = append(s.params, byte(c))
		s.state = vtDCSParam
	case c < 0x40 && s.state == vtDCSEntry:
		s.prefix = byte(c)
		s.state = vtDCSParam
	case c < 0x40:
		s.state = vtDCSIgnore
	default:
		s.final = byte(c)
		s.state = vtDCSPassthrough
	}
}

// stringQuery reports whether the current string, ended now, asks for an
// answer (or is a DCS a VT500 parser ignores).
func (s *stripper) stringQuery() bool {
	switch s.state {
	case vtOSCString:
		return isOSCQuery(s.body)
	case vtDCSPassthrough:
		return isDCSQuery(s.inter, s.final)
	case vtDCSIgnore:
		return true
	case vtSOSPMAPCString:
		if s.kind != '_' {
			return false
		}
		return isAPCQuery(s.body) || s.apcBEL >= 0 && isAPCQuery(s.body[:s.apcBEL])
	}
	return false
}

// endString is called when a string ends (by whatever ends it: terminals
// differ on whether CAN, SUB and a lone ESC dispatch it, so each does here).
// A query is removed and leaves the ground state; a kept string leaves its
// state for begin to record, so that what follows knows it ended one.
func (s *stripper) endString() bool {
	if s.stringQuery() {
		s.remove()
		return true
	}
	return false
}

// finish handles a sequence cut by the end of the buffer.
func (s *stripper) finish() {
	if s.state.isString() && s.state != vtDCSIgnore && s.stringQuery() {
		s.remove()
	}
}
