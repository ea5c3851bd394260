package sanitize

import "bytes"

// What a terminal answers. Each rule errs on the side of removing: a
// sequence that only looks like a query costs the replay nothing visible,
// while an answer lands in the shell as typed input.

// isCSIQuery reports whether CSI <prefix><params><inter><final> asks the
// terminal to answer.
func isCSIQuery(prefix byte, params, inter []byte, final byte) bool {
	has := func(b byte) bool { return bytes.IndexByte(inter, b) >= 0 }
	switch final {
	case 'c': // DA1, DA2 (>), DA3 (=)
		return true
	case 'n': // DSR, DECDSR (?); CSI > Ps n sets key modifiers
		return prefix != '>'
	case 'p': // DECRQM (CSI Ps $ p, CSI ? Ps $ p)
		return has('$')
	case 'q': // XTVERSION (CSI > q); CSI Ps SP q sets the cursor style
		return prefix == '>' && len(inter) == 0
	case 'u': // kitty keyboard flags (CSI ? u), DECRQTSR ($), DECRQUPSS (&)
		return prefix == '?' || has('$') || has('&')
	case 'm', 'S': // XTQMODKEYS (CSI ? Pp m), XTSMGRAPHICS (CSI ? Pi ; Pa ; Pv S)
		return prefix == '?'
	case 'x': // DECREQTPARM; CSI Ps * x is DECSACE
		return prefix == 0 && len(inter) == 0
	case 't': // XTWINOPS reports: 11, 13-16, 18-21
		if prefix != 0 || len(inter) != 0 {
			return false
		}
		n := firstParam(params)
		return n == 11 || (n >= 13 && n <= 16) || (n >= 18 && n <= 21)
	case '|': // DECRQLP ('), XTREPORTSGR (#)
		return has('\'') || has('#')
	case 'w': // DECRQPSR ($), DECRQKT (,)
		return has('$') || has(',')
	case 'v': // DECRQDE ("), DECRQPKU (,)
		return has('"') || has(',')
	case 'y': // DECRQCRA
		return has('*')
	case 'R': // XTREPORTCOLORS
		return has('#')
	case 'h': // in-band resize reports (mode 2048) send the size at once
		return prefix == '?' && hasParam(params, 2048)
	}
	return false
}

// firstParam is the first numeric parameter, -1 when absent or huge.
func firstParam(p []byte) int {
	n := -1
	for _, d := range p {
		if d < '0' || d > '9' {
			break
		}
		n = max(n, 0)*10 + int(d-'0')
		if n > 1<<20 {
			return -1
		}
	}
	return n
}

func hasParam(p []byte, want int) bool {
	for f := range bytes.SplitSeq(p, []byte{';'}) {
		if firstParam(f) == want {
			return true
		}
	}
	return false
}

// isDCSQuery reports whether a DCS with these intermediates and final byte
// asks for an answer: DECRQSS ($ q), XTGETTCAP (+ q), XTGETXRES (+ Q).
func isDCSQuery(inter []byte, final byte) bool {
	has := func(b byte) bool { return bytes.IndexByte(inter, b) >= 0 }
	switch final {
	case 'q':
		return has('$') || has('+')
	case 'Q':
		return has('+')
	}
	return false
}

// isOSCQuery reports whether an OSC body asks for an answer: a "?" field
// (colour queries OSC 4, 5, 10-19, 104…, the OSC 52 clipboard read, and any
// other), XTQALLOWED and friends (OSC 60-62), kitty's colour (OSC 21
// key=?), notification (OSC 99 p=?) and clipboard (OSC 5522) protocols, and
// iTerm2's OSC 1337 reports (ReportCellSize, ReportVariable) and upload
// request (RequestUpload), which those terminals answer.
func isOSCQuery(body []byte) bool {
	cmdField, args, hasArgs := bytes.Cut(body, []byte{';'})
	cmd := firstParam(cmdField)
	for rest, more := args, hasArgs; more; {
		var f []byte
		f, rest, more = bytes.Cut(rest, []byte{';'})
		if len(f) == 1 && f[0] == '?' || cmd == 21 && bytes.HasSuffix(f, []byte("=?")) {
			return true
		}
	}
	first, _, _ := bytes.Cut(args, []byte{';'})
	switch cmd {
	case 60, 61, 62, 5522:
		return true
	case 99:
		for kv := range bytes.SplitSeq(first, []byte{':'}) {
			if bytes.Equal(kv, []byte("p=?")) {
				return true
			}
		}
	case 1337:
		return bytes.HasPrefix(first, []byte("Report")) || bytes.HasPrefix(first, []byte("RequestUpload"))
	}
	return false
}

// isAPCQuery reports whether an APC body is a kitty graphics command that
// the terminal answers: a query (a=q), or any command carrying an image id
// or number (i=, I=) unless all answers are suppressed (q=2). Commands
// without an id display images without an answer and are kept.
func isAPCQuery(body []byte) bool {
	if len(body) == 0 || body[0] != 'G' {
		return false
	}
	ctrl, _, _ := bytes.Cut(body[1:], []byte{';'})
	var query, id, quiet bool
	for kv := range bytes.SplitSeq(ctrl, []byte{','}) {
		k, v, _ := bytes.Cut(kv, []byte{'='})
		switch string(k) {
		case "a":
			query = query || string(v) == "q"
		case "i", "I":
			id = id || (len(v) > 0 && string(v) != "0")
		case "q":
			quiet = string(v) == "2"
		}
	}
	return query || (id && !quiet)
}
