package sanitize

import "testing"

// TestStripQueriesForms: each query a terminal answers, in the forms a
// terminal parses (7-bit, C1 encoded in UTF-8, raw 8-bit; every terminator;
// C0 controls inside), leaves the replay. Regression tests for issue 9 item
// 1 (the red team's forms first); each of these failed on the sanitizer that
// only knew 7-bit shapes.
func TestStripQueriesForms(t *testing.T) {
	tests := []struct{ name, in, want string }{
		// The forms the red team replayed into Chromium.
		{"utf8 c1 dsr", "a\xc2\x9b6nb", "ab"},
		{"utf8 c1 da1", "a\xc2\x9bcb", "ab"},
		{"utf8 c1 decrqss", "a\xc2\x90$qm\xc2\x9cb", "ab"},
		{"utf8 c1 osc colour query", "a\xc2\x9d11;?\xc2\x9cb", "ab"},
		{"osc ended by a lone esc", "a\x1b]11;?\x1b[mb", "a\x1b[mb"},
		{"dcs ended by a lone esc", "a\x1bP$q\"p\x1b[mb", "a\x1b[mb"},
		{"dcs with parameters", "a\x1bP1$qm\x1b\\b", "ab"},
		{"dcs with c0 inside", "a\x1bP$\rqm\x1b\\b", "ab"},
		{"csi with c0 inside", "a\x1b[?25$\rpb", "a\rb"}, // the CR is executed, as the terminal would
		{"csi with bs inside", "\x1b[6\bn", "\b"},
		// x/ansi ORs a C0 inside a CSI into its final: SOH + 'b' reads
		// as 'c', DA1 (found by FuzzReplayOracle). Any CSI or escape
		// sequence with a C0 inside goes, the C0 stays.
		{"c0 inside a csi turns b into c", "\xc2\x9b\x00\x01b0", "\x00\x010"},
		{"c0 inside an sgr", "\x1b[1\r;31mx", "\rx"},
		{"c0 inside an escape sequence", "\x1b\x01cx", "\x01x"},

		// Other C1 forms and terminators.
		{"utf8 c1 osc ended by bel", "\xc2\x9d10;?\x07x", "x"},
		{"utf8 c1 osc ended by esc st", "\xc2\x9d10;?\x1b\\x", "x"},
		{"osc ended by utf8 st", "\x1b]11;?\xc2\x9cx", "x"},
		{"osc aborted by can", "\x1b]11;?\x18x", "\x18x"},
		{"osc aborted by sub", "\x1b]11;?\x1ax", "\x1ax"},
		{"dcs aborted by can", "\x1bP+q544e\x18x", "\x18x"},
		{"utf8 c1 decid", "a\xc2\x9ab", "ab"},
		{"decid", "a\x1bZb", "ab"},
		{"raw 8-bit csi is dropped", "a\x9b6nb", "a6nb"},
		{"raw 8-bit dcs is dropped", "\x90$qm\x9cx", "$qmx"},
		{"utf8 c1 xtversion", "\xc2\x9b>qx", "x"},
		{"utf8 c1 decrqm", "\xc2\x9b?2026$px", "x"},
		{"c1 csi abandons a partial csi", "\x1b[1\xc2\x9b6nx", "\x1b[1\x1b\\x"},

		// Every other query family.
		{"dsr", "\x1b[5n\x1b[6n\x1b[?6n\x1b[?15n\x1b[?996nx", "x"},
		{"da", "\x1b[c\x1b[0c\x1b[>c\x1b[>0c\x1b[=cx", "x"},
		{"decrqm ansi and dec", "\x1b[4$p\x1b[?1$px", "x"},
		{"xtversion", "\x1b[>q\x1b[>0qx", "x"},
		{"window reports", "\x1b[11t\x1b[13;2t\x1b[14t\x1b[15t\x1b[16t\x1b[18t\x1b[19t\x1b[20t\x1b[21tx", "x"},
		{"decreqtparm", "\x1b[x\x1b[1xx", "x"},
		{"decrqpsr decrqtsr decrqupss", "\x1b[1$w\x1b[1$u\x1b[&ux", "x"},
		{"kitty keyboard query", "\x1b[?ux", "x"},
		{"xtqmodkeys xtsmgraphics", "\x1b[?4m\x1b[?1;1Sx", "x"},
		{"decrqcra decrqde decrqlp", "\x1b[1;1;1;1;1;1*y\x1b[\"v\x1b[1'|x", "x"},
		{"xtreportsgr xtreportcolors", "\x1b[1;1;1;1#|\x1b[#Rx", "x"},
		{"in-band resize reports at once", "\x1b[?2048hx", "x"},
		{"decrqss xtgettcap xtgetxres", "\x1bP$qr\x1b\\\x1bP+q544e\x1b\\\x1bP+Qfont\x1b\\x", "x"},
		{"osc palette query", "\x1b]4;1;?\x07\x1b]4;1;#000;2;?\x07x", "x"},
		{"osc dynamic colours", "\x1b]10;?\x07\x1b]12;?\x07\x1b]17;?\x07\x1b]19;?\x07x", "x"},
		{"osc clipboard read", "\x1b]52;c;?\x07x", "x"},
		{"osc xtqallowed", "\x1b]60\x07x", "x"},
		{"kitty colour query", "\x1b]21;foreground=?\x1b\\x", "x"},
		{"kitty clipboard", "\x1b]5522;type=read;dGV4dC9wbGFpbg==\x1b\\x", "x"},
		{"kitty notification query", "\x1b]99;i=1:p=?;\x1b\\x", "x"},
		{"osc c0 inside is ignored", "\x1b]1\r1;?\x07x", "x"},
		{"enq", "a\x05b", "ab"},
		{"enq inside a sequence", "\x1b[6\x05nx", "x"},

		// Kitty graphics and iTerm2: stripped where they answer.
		{"kitty graphics query", "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\x", "x"},
		{"kitty graphics with id answers", "\x1b_Gi=5,a=T,f=100;AAAA\x1b\\x", "x"},
		{"kitty graphics query ended by bel", "\x1b_Ga=q,i=1\x07;A\x1b\\x", "x"},
		{"kitty graphics quiet kept", "\x1b_Gi=5,a=T,q=2;AAAA\x1b\\x", "\x1b_Gi=5,a=T,q=2;AAAA\x1b\\x"},
		{"kitty graphics without id kept", "\x1b_Ga=T,f=100;AAAA\x1b\\x", "\x1b_Ga=T,f=100;AAAA\x1b\\x"},
		{"iterm2 report cell size", "\x1b]1337;ReportCellSize\x07x", "x"},
		{"iterm2 report variable", "\x1b]1337;ReportVariable=dGVybQ==\x07x", "x"},
		{"iterm2 request upload", "\x1b]1337;RequestUpload=format=tgz\x07x", "x"},
		{"iterm2 inline image kept", "\x1b]1337;File=inline=1:AAAA\x07x", "\x1b]1337;File=inline=1:AAAA\x07x"},

		// Removing must not let the neighbours form a query.
		{"abandoned csi then query", "\x1b[\x1b[6n6n", "\x1b[\x1b\\6n"},
		{"osc ended by the query's esc", "\x1b]11\x1b[6n;?\x07", "\x1b]11\x1b\\;?\x07"},
		{"c1 inside an osc is dropped", "\x1b]11\xc2\x9b;?\x07x", "x"},
		{"enq joins nothing", "\x1b\x05[6nx", "x"},
		{"removed string then its st", "\x1b]11;?\x1b\x1b[6nx", "\x1b\x1b\\x"},

		// Malformed sequences, ignored by VT500 parsers and acted on by lenient ones.
		{"csi marker after a parameter", "\x1b[6?nx", "x"},
		{"csi interrupted by a non-ascii character", "\x1b[6\xc3\xaenx", "nx"},
		{"dcs marker after a parameter", "\x1bP1?$qm\x1b\\x", "x"},

		// Unfinished at the end.
		{"unfinished osc query at the end", "ab\x1b]11;?", "ab"},
		{"unfinished dcs query at the end", "ab\x1bP$qm", "ab"},
		{"unfinished title at the end kept", "ab\x1b]0;ti", "ab\x1b]0;ti"},
		{"unfinished csi at the end kept", "ab\x1b[6", "ab\x1b[6"},
		{"unfinished utf8 at the end kept", "ab\xe4\xb8", "ab\xe4\xb8"},

		// A lead byte without its continuation: x/ansi would take the
		// next two bytes as its continuation and read 0x9b as CSI.
		{"lead byte before a character", "\xc5\xc5\x9bc", "\xc5\x9bc"},

		// Kept.
		{"sgr with colons", "\x1b[38:2::1:2:3mx", "\x1b[38:2::1:2:3mx"},
		{"xtmodkeys kept", "\x1b[>4;1m\x1b[>4nx", "\x1b[>4;1m\x1b[>4nx"},
		{"cursor style kept", "\x1b[2 q\x1b[1\"qx", "\x1b[2 q\x1b[1\"qx"},
		{"decstr kept", "\x1b[!px", "\x1b[!px"},
		{"kitty keyboard push kept", "\x1b[>1u\x1b[<u\x1b[ux", "\x1b[>1u\x1b[<u\x1b[ux"},
		{"hyperlink kept", "\x1b]8;;https://x/?a=1\x1b\\l\x1b]8;;\x1b\\", "\x1b]8;;https://x/?a=1\x1b\\l\x1b]8;;\x1b\\"},
		{"sixel kept", "\x1bPq#0;2;0;0;0~-\x1b\\x", "\x1bPq#0;2;0;0;0~-\x1b\\x"},
		{"utf8 c1 sgr kept", "\xc2\x9b1mx", "\xc2\x9b1mx"},
		{"utf8 c1 nel kept", "a\xc2\x85b", "a\xc2\x85b"},
		{"text with c1-like continuation bytes kept", "丛世界", "丛世界"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(StripQueries([]byte(tt.in)))
			if got != tt.want {
				t.Errorf("StripQueries(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := string(StripQueries([]byte(got))); again != got {
				t.Errorf("not stable: StripQueries(%q) = %q", got, again)
			}
		})
	}
}

// TestStripQueriesFromResumePoint: a resuming client already holds the
// bytes before its offset; a query cut by that offset is not completed by
// what it is sent (its start at the client is cancelled with CAN), and
// nothing else changes.
func TestStripQueriesFromResumePoint(t *testing.T) {
	tests := []struct{ name, held, rest, want string }{
		{"csi cut after its introducer", "$ \x1b[", "6nx", "\x18x"},
		{"osc query cut before its terminator", "\x1b]11;", "?\x07x", "\x18x"},
		{"unfinished osc query held, nothing new", "ab\x1b]11;?", "", "\x18"},
		{"title cut kept", "\x1b]0;ti", "tle\x07x", "tle\x07x"},
		{"sgr cut kept", "\x1b[3", "1mx", "1mx"},
		{"query after the point", "ab", "\x1b[6nc", "c"},
		{"character cut by the point", "a\xe4", "\xb8\x96b", "\xb8\x96b"},
		{"c1 csi cut by the point", "\xc2", "\x9b6nx", "\x18x"},
		// The character cut by the point ends the held CSI as malformed:
		// xterm.js would go on reading ">c" as DA2 (found by
		// TestXtermAnswersNoReplay).
		{"character cut inside a held csi", "\x1b[\xc3", "\xa9>c", "\x18>c"},
		{"nothing new", "ab", "", ""},
		{"osc query with line feeds held", "\x1b]11;\n\n?", "\x07x", "\x18x"},
		// The client holds a byte terminals read differently: its state
		// is unknown, CAN resets it.
		{"raw c1 held", "\x9b", "0c", "\x18\x18\x180c"},
		{"c1 inside a string held", "\x1b]0;t\xc2\x9b", "6n", "\x18\x18\x186n"},
		{"lead byte held", "\xc5", "\xc5\x9bc", "\x18\x18\x18\xc5\x9bc"},
		{"lead byte held, then a cut character", "\xc5\xc5", "\x9bc", "\x18\x18\x18c"},
		{"raw c1 held, then an escape sequence", "\x9b\x1b[m", "x", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StripQueriesFrom([]byte(tt.held+tt.rest), len(tt.held))
			if got == nil || string(got) != tt.want {
				t.Errorf("StripQueriesFrom(%q|%q) = %q, want %q", tt.held, tt.rest, got, tt.want)
			}
		})
	}
}
