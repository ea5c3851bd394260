package replayoracle

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termgate/termgate/screen"
)

// Every form of each control that starts or ends a query: 7-bit (ESC and a
// byte), UTF-8-encoded C1 (which xterm.js parses as the control) and raw
// 8-bit C1 (which xterm.js's UTF-8 decoder drops; an 8-bit terminal takes
// it as the control).
var (
	csiForms = []string{"\x1b[", "\u009b", "\x9b"}
	oscForms = []string{"\x1b]", "\u009d", "\x9d"}
	dcsForms = []string{"\x1bP", "\u0090", "\x90"}
	strForms = []string{"\x1bX", "\x1b^", "\x1b_", "\u0098", "\u009e", "\u009f", "\x98", "\x9e", "\x9f"}
	stForms  = []string{"\x1b\\", "\u009c", "\x9c", "\x07"}

	csiQueries = []string{"6n", "?6n", "5n", "c", ">c", "=c", "?25$p", "4$p", "14t", "16t", "18t", "?u", "x"}
	oscQueries = []string{"11;?", "10;?", "12;?", "4;1;?", "52;c;?"}
	dcsQueries = []string{"$qm", "$q\"p", "$qr", "$q q", "+q544e"}
)

// screenForms is every query in every form, each introducer and
// terminator in each of its forms.
func screenForms() []string {
	var out []string
	for _, in := range csiForms {
		for _, q := range csiQueries {
			out = append(out, in+q)
		}
	}
	for _, in := range oscForms {
		for _, q := range oscQueries {
			for _, st := range stForms {
				out = append(out, in+q+st)
			}
		}
	}
	for _, in := range dcsForms {
		for _, q := range dcsQueries {
			for _, st := range stForms {
				out = append(out, in+q+st)
			}
		}
	}
	// A query inside a string or sequence another form opens or ends.
	for _, outer := range append(append([]string{}, strForms...), "\x1b", "\x1b[1", "\x1b]0;t", "\x1bP1") {
		for _, in := range csiForms {
			out = append(out, outer+in+"6n")
		}
		for _, st := range stForms {
			out = append(out, outer+st+"\x1b[6n", outer+"x"+st+"\u009b6n")
		}
	}
	return out
}

// snapshotOf is what the screen replay sends a client after out, fed in
// two writes split at cut.
func snapshotOf(out []byte, cut int) []byte {
	term := screen.New(80, 24, 64<<10)
	term.Write(out[:cut])
	term.Write(out[cut:])
	return term.Snapshot()
}

// TestXtermAnswersNoScreenReplay: issue 18 item 8. xterm.js, the page's
// terminal, answers queries in their 7-bit and UTF-8 C1 forms as printed;
// it answers nothing to the screen replay (the emulator's snapshot) of any
// of them, split anywhere, and the replay shows what xterm.js shows after
// the output itself.
func TestXtermAnswersNoScreenReplay(t *testing.T) {
	x := startXterm(t)
	forms := screenForms()
	answeredC1 := 0
	for _, f := range forms {
		raw := []byte("$ " + f + "$ ")
		answers, shows := x.run(t, nil, raw)
		if len(answers) > 0 && strings.ContainsAny(f, "\u009b\u009d\u0090") {
			answeredC1++
		}
		for cut := 0; cut <= len(raw); cut += 1 + len(raw)/8 {
			snap := snapshotOf(raw, cut)
			got, replayShows := x.run(t, nil, snap)
			if len(got) > 0 {
				t.Fatalf("the screen replay of %q (split at %d) made xterm.js answer %q; the replay: %q", f, cut, got, snap)
			}
			if !sameView(shows, replayShows, utf8.Valid(raw)) {
				t.Errorf("after %q xterm.js shows\n%s\nafter its screen replay\n%s", f, shows, replayShows)
				break
			}
		}
	}
	t.Logf("%d forms; xterm.js answers %d in a UTF-8 C1 form as printed, none replayed", len(forms), answeredC1)
	if answeredC1 < 10 {
		t.Errorf("xterm.js answers only %d UTF-8 C1 forms: the oracle no longer sees them", answeredC1)
	}
}

// sameView compares two views of xterm.js. The emulator draws bytes that
// are not UTF-8 as U+FFFD, as most terminals do, where xterm.js drops
// them: the rows are compared without it, and the cursor only when the
// output was valid UTF-8.
func sameView(want, got string, cursor bool) bool {
	strip := func(s string) string {
		s = strings.ReplaceAll(s, "\ufffd", "")
		if !cursor {
			s = s[:strings.LastIndex(s, "\ncursor ")]
		}
		// xterm.js keeps a space it was sent; a snapshot leaves out
		// trailing blanks.
		rows := strings.Split(s, "\n")
		for i, r := range rows {
			rows[i] = strings.TrimRight(r, " ")
		}
		return strings.Join(rows, "\n")
	}
	return strip(want) == strip(got)
}

// TestXtermAnswersNoGeneratedScreenReplay: generated output made of every
// control's forms, queries and text, fed to the emulator in random pieces:
// xterm.js answers nothing to its snapshot.
func TestXtermAnswersNoGeneratedScreenReplay(t *testing.T) {
	x := startXterm(t)
	var pieces []string
	for _, l := range [][]string{csiForms, oscForms, dcsForms, strForms, stForms, csiQueries, oscQueries, dcsQueries} {
		pieces = append(pieces, l...)
	}
	pieces = append(pieces, "\x1b", "\x18", "\x1a", "\r\n", "\x00", "\x7f", "\u0085", "\u0084", "\u0088", "\u0080",
		"\xc2", "\xe2\x80", "é", "世", "a", "$ ", "0;title", "1", ";")
	rng := rand.New(rand.NewPCG(18, 8))
	n := 400
	if testing.Short() {
		n = 150
	}
	forms := screenForms()
	queries := 0
	for range n {
		// Noise, a query in one of its forms with pieces thrown in, noise.
		noise := func(b []byte) []byte {
			for range rng.IntN(6) {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
			return b
		}
		q := []byte(forms[rng.IntN(len(forms))])
		for range rng.IntN(3) {
			at := rng.IntN(len(q) + 1)
			q = append(q[:at:at], append([]byte(pieces[rng.IntN(len(pieces))]), q[at:]...)...)
		}
		b := noise(append(noise(nil), q...))
		if len(x.answers(t, nil, b)) > 0 {
			queries++
		}
		snap := snapshotOf(b, rng.IntN(len(b)+1))
		if a := x.answers(t, nil, snap); len(a) > 0 {
			t.Fatalf("the screen replay %q of %q made xterm.js answer %q", snap, b, a)
		}
	}
	t.Logf("%d generated outputs, %d answered by xterm.js as printed, none replayed", n, queries)
	if queries < n/20 {
		t.Errorf("only %d of %d generated outputs are queries: the generator no longer exercises the emulator", queries, n)
	}
}
