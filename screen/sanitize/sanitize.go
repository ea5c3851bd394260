// Package sanitize makes a terminal's buffered output safe to replay to a
// terminal that did not see it live: it removes every sequence a terminal
// would answer (the answer would arrive in the shell as typed input) and
// starts a cut buffer on a clean boundary. The sessions' raw replay and
// resume use it, and package screen falls back to it. It parses output as
// terminals do (a VT500 state machine over UTF-8, parser.go; what counts as
// a query is query.go), beside package screen's emulator, and imports only
// the standard library. It runs no goroutines and holds no state between
// calls.
package sanitize

import "bytes"

// Replay makes buffered output safe to send to a terminal that did
// not see it live. When truncated (the ring has wrapped) it drops the partial
// line at the start, so the replay never begins inside a UTF-8 or escape
// sequence; it always removes terminal queries (device status, device
// attributes, mode, colour and capability reports, …), whose answers would
// otherwise arrive in the shell as typed input. See StripQueries.
func Replay(b []byte, truncated bool) []byte {
	if truncated {
		// Cut first, then strip: the client's terminal parses the replay from
		// its first byte in the ground state, and so must the stripper.
		b = b[safeStart(b):]
	}
	out := StripQueries(b)
	if truncated {
		// Stripping can bring a stray continuation byte to the front.
		out = out[skipContinuation(out, 0):]
	}
	return out
}

// safeStart finds where a replay cut at an arbitrary byte may begin: after
// the first line feed (a line feed is never part of a UTF-8 sequence and ends
// any printable run), or, in output without line feeds, at the next escape
// sequence or character start.
func safeStart(b []byte) int {
	i := 0
	if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
		i = nl + 1
	} else if esc := bytes.IndexByte(b, 0x1b); esc >= 0 {
		i = esc
	}
	return skipContinuation(b, i)
}

func skipContinuation(b []byte, i int) int {
	for i < len(b) && b[i]&0xC0 == 0x80 {
		i++
	}
	return i
}

// StripQueries removes from b every sequence a terminal would answer, and
// returns the rest. It parses b the way a terminal does, with the DEC/xterm
// VT500 state machine (vt100.net/emu/dec_ansi_parser) over UTF-8: 7-bit
// escape sequences, C1 controls encoded in UTF-8 (U+0080–U+009F, which
// xterm.js acts on), C0 controls executed inside CSI and escape sequences,
// strings (OSC, DCS, SOS, PM, APC) ended by ST, BEL (OSC), a lone ESC, C1 ST,
// CAN or SUB. What it removes is listed in query.go.
//
// Where terminals disagree on a byte, the byte is removed so that every
// terminal reads the rest the same way: ENQ (asks for the answerback
// message) anywhere; raw bytes 0x80–0x9F that are not part of a UTF-8
// character (a C1 control to an 8-bit terminal, U+FFFD to a UTF-8 one, data
// inside a string to others); UTF-8 lead bytes without their continuation
// bytes (some parsers swallow the next bytes whatever they are); and C1
// controls other than ST inside a string (some terminals end the string
// there, others keep it as data). Malformed
// CSI and DCS sequences, which a VT500 parser ignores but lenient parsers may
// act on, are removed too.
//
// Removing a sequence must not change how its neighbours parse. When the
// sequence's introducer was also ending a string (a lone ESC) or abandoning a
// partial sequence, the removed bytes are replaced by ESC \ (ST), which ends
// both the same way; C0 controls executed inside a removed CSI or escape
// sequence are kept. The result never grows.
//
// An incomplete sequence at the end is kept (its rest follows in live
// output), except an unfinished string that is already a query: any later
// ESC, even the one starting the prompt's colours, would end it and make the
// terminal answer.
//
// Terminals that decode output as Latin-1 or another 8-bit charset (not
// UTF-8) are out of scope: to them continuation bytes of valid UTF-8
// characters are C1 controls.
func StripQueries(b []byte) []byte {
	s := stripper{out: make([]byte, 0, len(b))}
	s.run(b, 0)
	return s.out
}

// StripQueriesFrom is StripQueries for a resume: the client already holds
// buf[:from] and gets what StripQueriesFrom returns for buf[from:]. The bytes
// before from are parsed for the state they leave the terminal in, so a
// query cut by the resume point (the client holds "ESC [", the rest is "6n")
// is found too; when its start is already at the client, CAN cancels it. CAN
// also starts the output when the client holds a byte that terminals read
// differently (see StripQueries) after the last ESC, CAN or SUB, since its
// terminal's state is then unknown.
func StripQueriesFrom(buf []byte, from int) []byte {
	s := stripper{out: make([]byte, 0, len(buf))}
	s.run(buf, from)
	return s.out[s.base:]
}
