package screen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// genOutput writes n random pieces of terminal output: text (wide and
// combining characters included), controls, SGR, cursor moves, erasing,
// insert and delete, scroll regions, the alternate screens, modes, titles,
// charsets, saved cursors and queries.
func genOutput(r *rand.Rand, n, w, h int) string {
	var b strings.Builder
	words := []string{"hello", "wörld", "日本語", "e\u0301", "🙂", "x", "    ", "a\u0300\u0301", "ｗｉｄｅ", "ok"}
	for range n {
		switch k := r.IntN(40); {
		case k < 10:
			b.WriteString(words[r.IntN(len(words))])
		case k < 13:
			b.WriteString("\r\n")
		case k == 13:
			b.WriteString([]string{"\n", "\r", "\t", "\b", "\x1bD", "\x1bE", "\x1bM"}[r.IntN(7)])
		case k < 17:
			b.WriteString(genSGR(r))
		case k < 20:
			fmt.Fprintf(&b, "\x1b[%d;%dH", r.IntN(h+2), r.IntN(w+2))
		case k == 20:
			fmt.Fprintf(&b, "\x1b[%d%c", r.IntN(5), "ABCDEFGd`"[r.IntN(9)])
		case k == 21:
			fmt.Fprintf(&b, "\x1b[%dJ", r.IntN(3))
		case k == 22:
			fmt.Fprintf(&b, "\x1b[%dK", r.IntN(3))
		case k == 23:
			fmt.Fprintf(&b, "\x1b[%d%c", r.IntN(4), "@PXLMSTb"[r.IntN(8)])
		case k == 24:
			if r.IntN(3) == 0 {
				b.WriteString("\x1b[r")
			} else {
				top := 1 + r.IntN(h)
				fmt.Fprintf(&b, "\x1b[%d;%dr", top, top+r.IntN(h))
			}
		case k == 25:
			fmt.Fprintf(&b, "\x1b[?%d%c", []int{47, 1047, 1049}[r.IntN(3)], "hl"[r.IntN(2)])
		case k == 26:
			fmt.Fprintf(&b, "\x1b[?%d%c", []int{1, 5, 6, 7, 25, 9, 1000, 1002, 1003, 1005, 1006, 1015, 1016, 1004, 2004}[r.IntN(15)], "hl"[r.IntN(2)])
		case k == 27:
			fmt.Fprintf(&b, "\x1b[%d%c", []int{4, 20}[r.IntN(2)], "hl"[r.IntN(2)])
		case k == 28:
			b.WriteString([]string{"\x1b=", "\x1b>", "\x1b7", "\x1b8", "\x1b[s", "\x1b[u"}[r.IntN(6)])
		case k == 29:
			fmt.Fprintf(&b, "\x1b]%d;title %d ✓\a", []int{0, 2}[r.IntN(2)], r.IntN(100))
		case k == 30:
			b.WriteString([]string{"\x1b(0", "\x1b(B", "\x1b)0", "\x1b)B", "\x0e", "\x0f", "lqqk"}[r.IntN(7)])
		case k == 31:
			fmt.Fprintf(&b, "\x1b[%d q", r.IntN(7))
		case k == 32:
			b.WriteString([]string{"\x1b[6n", "\x1b[c", "\x1b[>c", "\x1b[5n", "\x1b]11;?\a", "\x1bP+q544e\x1b\\"}[r.IntN(6)])
		case k < 36:
			for range r.IntN(3 * h) {
				fmt.Fprintf(&b, "line %d\r\n", r.IntN(1000))
			}
		default:
			b.WriteString(strings.Repeat("=", r.IntN(2*w)))
		}
	}
	return b.String()
}

func genSGR(r *rand.Rand) string {
	var ps []string
	for range 1 + r.IntN(3) {
		switch k := r.IntN(10); {
		case k < 4:
			ps = append(ps, fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 7, 8, 9, 21, 22, 23, 24, 25, 27, 28, 29, 53, 55}[r.IntN(19)]))
		case k < 6:
			ps = append(ps, fmt.Sprint([]int{30, 40, 90, 100}[r.IntN(4)]+r.IntN(8)))
		case k == 6:
			ps = append(ps, fmt.Sprintf("38;5;%d", r.IntN(256)))
		case k == 7:
			ps = append(ps, fmt.Sprintf("48;2;%d;%d;%d", r.IntN(256), r.IntN(256), r.IntN(256)))
		case k == 8:
			ps = append(ps, fmt.Sprintf("4:%d", r.IntN(6)))
		default:
			ps = append(ps, []string{"39", "49", "38:2::1:2:3"}[r.IntN(3)])
		}
	}
	return "\x1b[" + strings.Join(ps, ";") + "m"
}

// feedSplit feeds s in chunks cut at random points (or at every byte).
func feedSplit(t *Terminal, r *rand.Rand, s string, everyByte bool) {
	for len(s) > 0 {
		n := 1
		if !everyByte {
			n = 1 + r.IntN(min(len(s), 64))
		}
		t.Write([]byte(s[:n]))
		s = s[n:]
	}
}

// TestSnapshotRoundTrip: a fresh terminal fed a snapshot ends in the state
// of the terminal it was taken from (screens, cursor, modes, scrollback),
// however the output was split.
func TestSnapshotRoundTrip(t *testing.T) {
	iters := 400
	if testing.Short() {
		iters = 50
	}
	for i := range iters {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		w, h := 5+r.IntN(40), 2+r.IntN(15)
		out := genOutput(r, 20+r.IntN(200), w, h)
		a := New(w, h, 1<<20)
		a.Write([]byte(out))
		split := New(w, h, 1<<20)
		feedSplit(split, r, out, i%2 == 0)
		if got, want := dump(split), dump(a); got != want {
			t.Fatalf("case %d (%dx%d): the output split in pieces gives another state than whole\noutput %q\n%s", i, w, h, out, diff(want, got))
		}
		snap := a.Snapshot()
		b := New(w, h, 1<<20)
		b.Write([]byte(genOutput(r, 30, w, h))) // any earlier state,
		b.sb.reset()                            // but its own scrollback is not compared
		b.sbWrapped = 0
		b.Write(snap)
		if !a.alt.saved.valid {
			b.alt.saved = cursor{} // the client's own alternate-screen save slot is not cleared
		}
		if a.title == "" {
			b.title = "" // a snapshot leaves a title alone when none was set
		}
		if got, want := dump(b), dump(a); got != want {
			t.Fatalf("case %d (%dx%d): the snapshot does not restore the state\noutput %q\nsnapshot %q\n%s", i, w, h, out, snap, diff(want, got))
		}
		// The client's screen went into its scrollback, before the session's.
		if got, want := string(b.sb.bytes()), string(a.sb.bytes()); !strings.HasSuffix(got, want) || string(split.sb.bytes()) != want {
			t.Fatalf("case %d (%dx%d): scrollback differs\noutput %q\nwant %q\ngot  %q", i, w, h, out, want, got)
		}
	}
}

func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(wl), len(gl)) {
		var x, y string
		if i < len(wl) {
			x = wl[i]
		}
		if i < len(gl) {
			y = gl[i]
		}
		if x != y {
			fmt.Fprintf(&b, "line %d\n want %s\n got  %s\n", i, x, y)
		}
	}
	return b.String()
}
