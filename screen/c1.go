package screen

import "unicode/utf8"

// C1 controls and characters outside ASCII, decoded from UTF-8 in any
// parser state, are taken as the page's terminal takes them: xterm.js
// decodes UTF-8 first and parses code points, so U+009B is CSI to it, not
// a character. Drawn into a cell, such a code point would reach every
// client in the snapshot and act there (U+009B 6n asks the client for the
// cursor position, which it then types into the shell): it must never be
// a cell. The transitions follow xterm.js's VT500_TRANSITION_TABLE.

// char takes one decoded character at or above U+0080.
func (t *Terminal) char(r rune) {
	if r < 0xa0 {
		t.c1(r)
		return
	}
	p := &t.p
	switch p.state {
	case stGround:
		t.print(r)
	case stOSC:
		if len(p.osc)+utf8.RuneLen(r) <= maxOSC {
			p.osc = utf8.AppendRune(p.osc, r)
		}
	case stCSIIgnore, stString:
		// Part of a sequence being skipped.
	default:
		// Not part of an escape, a CSI or what follows ESC inside a
		// string: xterm.js drops the character with the sequence.
		p.state = stGround
	}
}

// invalid takes bytes that are not UTF-8. In the ground state they are
// drawn as U+FFFD, as most terminals show them (xterm.js shows nothing);
// inside a sequence they are dropped without ending it, as xterm.js's
// decoder drops them before its parser sees anything.
func (t *Terminal) invalid() {
	if t.p.state == stGround {
		t.print(utf8.RuneError)
	}
}

// c1 acts on the C1 control r (U+0080 to U+009F) in any state.
func (t *Terminal) c1(r rune) {
	p := &t.p
	switch r {
	case 0x9b: // CSI
		t.enter(stCSI)
	case 0x9d: // OSC
		t.enter(stOSC)
	case 0x90, 0x98, 0x9e, 0x9f: // DCS, SOS, PM, APC: skipped up to ST
		t.enter(stString)
	case 0x9c: // ST
		osc := p.state == stOSC
		p.state = stGround
		if osc {
			t.oscEnd()
		}
	default:
		// Any other C1 control ends a sequence; xterm.js acts on three.
		p.state = stGround
		switch r {
		case 0x84: // IND
			t.pendingWrap = false
			t.index()
		case 0x85: // NEL
			t.pendingWrap = false
			t.x = 0
			t.index()
		case 0x88: // HTS
			t.tabs[t.x] = true
		}
	}
}
