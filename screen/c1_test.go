package screen

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// c1In returns the first C1 control (U+0080 to U+009F) in snap as the
// page's terminal decodes it, or -1; a snapshot is valid UTF-8.
func c1In(t *testing.T, snap []byte) rune {
	t.Helper()
	if !utf8.Valid(snap) {
		t.Fatalf("the snapshot is not valid UTF-8: %q", snap)
	}
	for _, r := range string(snap) {
		if r >= 0x80 && r < 0xa0 {
			return r
		}
	}
	return -1
}

// TestC1QueriesAreNotDrawn: issue 18 item 8. A query in its UTF-8-encoded
// C1 form is a query to the page's terminal, not text: the emulator parses
// it as one, so no snapshot carries it, in any split of the output.
func TestC1QueriesAreNotDrawn(t *testing.T) {
	queries := []string{
		"\u009b6n", "\u009bc", "\u009b>c", "\u009b?6n", "\u009b?25$p",
		"\u0090$qm\u009c", "\u0090$qm\x1b\\", "\x1bP$qm\u009c",
		"\u009d11;?\u009c", "\u009d11;?\x07", "\x1b]11;?\u009c", "\u009d10;?\x1b\\",
		"\x1b[\u009b6n", "\x1b]0;x\u009b6n", "\x1bP\u009b6n", "\u009e\u009b6n",
	}
	for _, q := range queries {
		out := []byte("$ " + q + "$ ")
		for cut := 0; cut <= len(out); cut++ {
			term := New(80, 24, 4<<10)
			term.Write(out[:cut])
			term.Write(out[cut:])
			snap := term.Snapshot()
			if r := c1In(t, snap); r >= 0 {
				t.Fatalf("%q split at %d: the snapshot carries U+%04X: %q", q, cut, r, snap)
			}
			if got := strings.TrimRight(term.Text(), "\n "); got != "$ $" {
				t.Fatalf("%q split at %d: the screen shows %q, not the text around the query", q, cut, got)
			}
		}
	}
}

// TestC1ControlsAct: the C1 forms do what the 7-bit forms do.
func TestC1ControlsAct(t *testing.T) {
	for _, tc := range []struct{ c1, esc string }{
		{"\u009b31mred\u009b0m", "\x1b[31mred\x1b[0m"},
		{"\u009d0;title\u009c", "\x1b]0;title\x1b\\"},
		{"\u009d2;tïtle\u009c", "\x1b]2;tïtle\x07"},
		{"a\u0085b", "a\x1bEb"},
		{"a\u0084b", "a\x1bDb"},
		{"\x1b[5G\u0088\r\tX", "\x1b[5G\x1bH\r\tX"},
		{"a\u0090qstring\u009cb", "a\x1bPqstring\x1b\\b"},
		{"a\u009fapc\u009cb", "a\x1b_apc\x1b\\b"},
		{"a\x1b[3\u0080b", "a\x1b[3\x18b"}, // a C1 control ends a sequence
		{"a\x1b[3éb", "a\x1b[3\x18b"},      // so does a character, dropped
		{"a\x1b[3\x9bb", "a\x1b[3b"},       // a byte that is not UTF-8 is dropped
		{"\x1b]0;a\x9bb\x07", "\x1b]0;ab\x07"},
		{"a\xc2\x9b", "a\x1b["}, // nothing drawn until the sequence ends
	} {
		a, b := New(20, 5, 1<<10), New(20, 5, 1<<10)
		a.Write([]byte(tc.c1))
		b.Write([]byte(tc.esc))
		if got, want := dump(a), dump(b); got != want {
			t.Errorf("%q differs from %q\n%s", tc.c1, tc.esc, diff(want, got))
		}
	}
}

// TestC1EveryCodePoint: no C1 code point, alone or after any introducer,
// ever reaches a cell or the title.
func TestC1EveryCodePoint(t *testing.T) {
	for r := rune(0x80); r < 0xa0; r++ {
		for _, before := range []string{"", "x", "e", "\x1b", "\x1b[", "\x1b]0;", "\x1bP", "\x1b_", "\x1b(", "\u009b", "\u009d0;"} {
			for _, after := range []string{"", "6n", "x\u0301", "\x07"} {
				in := before + string(r) + after
				term := New(20, 5, 1<<10)
				term.Write([]byte(in))
				if got := c1In(t, term.Snapshot()); got >= 0 {
					t.Fatalf("%q: the snapshot carries U+%04X", in, got)
				}
				if strings.ContainsFunc(term.Title(), func(c rune) bool { return c >= 0x80 && c < 0xa0 }) {
					t.Fatalf("%q: the title carries a C1 control: %q", in, term.Title())
				}
			}
		}
	}
}
