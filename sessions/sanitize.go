package sessions

import "bytes"

// SanitizeReplay makes buffered output safe to send to a terminal that did
// not see it live. When truncated (the ring has wrapped) it drops the partial
// line at the start, so the replay never begins inside a UTF-8 or escape
// sequence; it always removes terminal queries (device status, device
// attributes, mode and colour reports, …), whose answers would otherwise
// arrive in the shell as typed input.
func SanitizeReplay(b []byte, truncated bool) []byte {
	out := StripQueries(b)
	if truncated {
		out = out[safeStart(out):]
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
	for i < len(b) && b[i]&0xC0 == 0x80 { // stray continuation bytes
		i++
	}
	return i
}

// scanner states: just enough of the VT500 parser to find sequence bounds.
const (
	stGround = iota
	stEsc
	stCSI
	stString // OSC, DCS, SOS, PM, APC: until BEL (OSC only) or ST
)

// StripQueries removes complete terminal query sequences from b and returns
// the rest unchanged. An incomplete sequence at the end is kept: its rest
// follows in live output.
func StripQueries(b []byte) []byte {
	out := make([]byte, 0, len(b))
	state, seqStart := stGround, 0
	var kind byte // ']' 'P' 'X' '^' '_' for stString
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch state {
		case stGround:
			switch c {
			case 0x1b:
				state, seqStart = stEsc, i
			case 0x05: // ENQ asks for the answerback message
			default:
				out = append(out, c)
			}
		case stEsc:
			switch c {
			case '[':
				state = stCSI
			case ']', 'P', 'X', '^', '_':
				state, kind = stString, c
			case 0x1b:
				out = append(out, b[seqStart:i]...)
				seqStart = i
			default:
				if c >= 0x20 && c < 0x30 { // intermediate: ESC ( 0 and friends
					continue
				}
				out = append(out, b[seqStart:i+1]...)
				state = stGround
			}
		case stCSI:
			if c >= 0x40 && c <= 0x7e {
				if !isCSIQuery(b[seqStart+2:i], c) {
					out = append(out, b[seqStart:i+1]...)
				}
				state = stGround
			} else if c == 0x1b { // a new sequence cancels this one
				out = append(out, b[seqStart:i]...)
				state, seqStart = stEsc, i
			} else if c == 0x18 || c == 0x1a { // CAN, SUB abort
				out = append(out, b[seqStart:i+1]...)
				state = stGround
			}
		case stString:
			end := -1
			if c == 0x07 {
				end = i + 1
			} else if c == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				end = i + 2
			} else if c == 0x1b && i+1 == len(b) {
				i = len(b) // incomplete ST at the very end
				continue
			} else if c == 0x1b { // ESC not starting ST aborts the string and starts a sequence
				out = append(out, b[seqStart:i]...)
				state, seqStart = stEsc, i
				continue
			}
			if end < 0 {
				continue
			}
			if !isStringQuery(kind, b[seqStart+2:i]) {
				out = append(out, b[seqStart:end]...)
			}
			i = end - 1
			state = stGround
		}
	}
	if state != stGround {
		out = append(out, b[seqStart:]...)
	}
	return out
}

// isCSIQuery reports whether CSI <params+intermediates> final asks the
// terminal to answer.
func isCSIQuery(p []byte, final byte) bool {
	var lead byte
	if len(p) > 0 && p[0] >= 0x3c && p[0] <= 0x3f {
		lead = p[0]
	}
	inter := byte(0)
	if len(p) > 0 && p[len(p)-1] >= 0x20 && p[len(p)-1] < 0x30 {
		inter = p[len(p)-1]
	}
	switch final {
	case 'n': // DSR; CSI > n is a key-modifier setting, not a request
		return lead != '>'
	case 'c': // DA1, DA2, DA3
		return inter == 0
	case 'p': // DECRQM (CSI ? Ps $ p)
		return inter == '$'
	case 'q': // XTVERSION (CSI > q); CSI Ps SP q sets the cursor style
		return lead == '>' && inter == 0
	case 'u', 'm', 'S': // kitty keyboard flags, XTQMODKEYS, XTSMGRAPHICS
		return lead == '?' && inter == 0
	case 'x': // DECREQTPARM
		return inter == 0 && lead == 0
	case 't': // window reports: 11, 13-16, 18-21
		if inter != 0 || lead != 0 {
			return false
		}
		n := 0
		for _, d := range p {
			if d == ';' {
				break
			}
			if d < '0' || d > '9' {
				return false
			}
			n = n*10 + int(d-'0')
			if n > 1000 {
				return false
			}
		}
		return n == 11 || (n >= 13 && n <= 16) || (n >= 18 && n <= 21)
	case '|': // DECRQLP (CSI Ps ' |)
		return inter == '\''
	}
	return false
}

// isStringQuery reports whether an OSC/DCS body asks for an answer: OSC
// colour or clipboard queries carry a "?" field; DCS $ q is DECRQSS and
// DCS + q is XTGETTCAP.
func isStringQuery(kind byte, body []byte) bool {
	switch kind {
	case ']':
		for f := range bytes.SplitSeq(body, []byte{';'}) {
			if len(f) == 1 && f[0] == '?' {
				return true
			}
		}
	case 'P':
		return bytes.HasPrefix(body, []byte("$q")) || bytes.HasPrefix(body, []byte("+q"))
	}
	return false
}
