package screen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// twins returns a terminal with the fast paths and one that takes every
// character through the general path (as before the fast paths).
func twins(w, h, sb int) (fast, slow *Terminal) {
	fast, slow = New(w, h, sb), New(w, h, sb)
	slow.perRune = true
	return fast, slow
}

// sameTerminal fails unless the two terminals hold the same cells, state,
// scrollback and snapshot, byte for byte.
func sameTerminal(t *testing.T, what string, fast, slow *Terminal) {
	t.Helper()
	if got, want := fast.sb.bytes(), slow.sb.bytes(); !bytes.Equal(got, want) {
		t.Fatalf("%s: the scrollback differs\nfast %q\nslow %q", what, got, want)
	}
	if got, want := fast.Snapshot(), slow.Snapshot(); !bytes.Equal(got, want) {
		t.Fatalf("%s: the snapshot differs\nfast %q\nslow %q", what, got, want)
	}
	if got, want := dump(fast), dump(slow); got != want {
		t.Fatalf("%s: the state differs\n%s", what, diff(want, got))
	}
	// dump shows a never-written cell and a space alike; the cells must
	// be identical too, or a later operation could tell them apart.
	for _, b := range [][2]*buffer{{&fast.main, &slow.main}, {&fast.alt, &slow.alt}} {
		for y := range b[1].lines {
			if !reflect.DeepEqual(b[0].lines[y], b[1].lines[y]) {
				t.Fatalf("%s: row %d differs\nfast %+v\nslow %+v", what, y, *b[0].lines[y], *b[1].lines[y])
			}
		}
	}
	if fast.sb.lines != slow.sb.lines || fast.sbWrapped != slow.sbWrapped || !reflect.DeepEqual(fast.clusters, slow.clusters) {
		t.Fatalf("%s: scrollback lines %d/%d wrapped %d/%d clusters %q/%q", what, fast.sb.lines, slow.sb.lines, fast.sbWrapped, slow.sbWrapped, fast.clusters, slow.clusters)
	}
}

// feedAt writes out in pieces ending at the given offsets.
func feedAt(t *Terminal, out []byte, cuts ...int) {
	prev := 0
	for _, c := range cuts {
		c = min(max(c, prev), len(out))
		t.Write(out[prev:c])
		prev = c
	}
	t.Write(out[prev:])
}

// fastPathCases are the places where a run of ASCII meets something else.
var fastPathCases = []struct {
	name string
	w, h int
	out  string
}{
	{"fills the row exactly", 10, 3, "0123456789"},
	{"wraps at the margin", 10, 3, "0123456789abc"},
	{"wraps and scrolls", 5, 2, strings.Repeat("abcdefg", 9)},
	{"pending wrap then CR", 5, 3, "abcde\rX"},
	{"pending wrap then newline", 5, 3, "abcde\r\nX"},
	{"pending wrap then backspace", 5, 3, "abcde\bX"},
	{"pending wrap then cursor move", 5, 3, "abcde\x1b[2;2HX"},
	{"one column", 1, 3, "abcdef"},
	{"two columns", 2, 2, "abcdefg日h"},
	{"run ends on a wide char's left half", 10, 2, "日本語\r\x1b[3Cab"},
	{"run starts on a wide char's right half", 10, 2, "日本語\r\x1b[1Cab"},
	{"run covers wide chars", 10, 2, "日本語x\rabcdefg"},
	{"one char on a right half", 10, 2, "日本語\r\x1b[1Cz"},
	{"one char on a left half", 10, 2, "日本語\r\x1b[2Cz"},
	{"wide char cut by the margin", 7, 2, "abcdef日xy"},
	{"wide chars with background", 10, 2, "\x1b[44m日本語\x1b[m\r\x1b[1Cab"},
	{"pen changes in the run", 20, 2, "a\x1b[1;31mbc\x1b[4:3;48;2;1;2;3mde\x1b[mf"},
	{"background fills scrolled rows", 5, 2, "\x1b[41m" + strings.Repeat("z", 17) + "\x1b[m"},
	{"DEC graphics on and off", 20, 3, "\x1b(0lqqk\x1b(Bab_`\x0e~x\x0f~x\x1b)0\x0eqqq\x0fqq"},
	{"DEC graphics at the margin", 5, 3, "\x1b(0qqqqqqqq\x1b(Bxx"},
	{"insert mode", 10, 3, "0123456789\r\x1b[4habc\x1b[4ldef"},
	{"insert mode over wide chars", 10, 3, "日本語\r\x1b[1C\x1b[4hab\x1b[4lcd"},
	{"autowrap off", 5, 3, "\x1b[?7labcdefgh\x1b[?7hijklmnop"},
	{"autowrap off with pending wrap", 5, 3, "abcde\x1b[?7lfg\x1b[?7hhi"},
	{"scroll region", 6, 6, "\x1b[2;4r\x1b[2;1H" + strings.Repeat("region", 9) + "\x1b[r"},
	{"below the scroll region", 6, 6, "\x1b[2;3r\x1b[6;1H" + strings.Repeat("bottom", 5)},
	{"origin mode", 6, 6, "\x1b[3;5r\x1b[?6h" + strings.Repeat("origin", 7)},
	{"alt screen", 6, 3, "main\x1b[?1049h" + strings.Repeat("alt", 9) + "\x1b[?1049lback"},
	{"combining after a run", 10, 2, "abc\u0301de\u0300"},
	{"combining after a wrap", 3, 2, "abc\u0301d"},
	{"tabs between runs", 20, 2, "a\tb\tc\x1b[3gd\te"},
	{"UTF-8 between runs", 10, 3, "aé日🙂bü\xffc\xe6\x97d"},
	{"invalid UTF-8 before ASCII", 10, 2, "\xe6\x97x\xc3y\xf0\x9f\x99z"},
	{"escape sequences between runs", 20, 3, "ab\x1b[Kcd\x1b7ef\x1b8gh\x1b]0;title\x07ij\x1bP1$r\x1b\\kl"},
	{"CSI with intermediates", 20, 3, "ab\x1b[2 qcd\x1b[!pef\x1b[>1;2mgh"},
	{"cancelled sequences", 20, 3, "ab\x1b[12\x18cd\x1b]0;x\x1aef\x1b[1;\x1b[31mgh"},
	{"DEL and controls in runs", 20, 3, "ab\x7fcd\x00ef\x07gh\x05ij"},
	{"C1 controls in runs", 20, 3, "ab\u009b31mcd\u009d0;t\u009cef\u0085gh\x9bij\x1b[\u009b1mkl\u0090q\u009cmn"},
	{"RIS in the middle", 10, 3, "\x1b[31m\x1b(0qq\x1bcabc"},
	{"DECALN then run", 5, 3, "\x1b#8\x1b[2;2Habcdefg"},
	{"resize keeps pending", 5, 3, "abcde"},
	{"long scrolling output", 40, 5, string(scrolling("plain", 3000)) + string(scrolling("colour", 3000)) + string(scrolling("gcc", 3000)) + string(scrolling("cjk", 2000)) + string(scrolling("wrap", 3000))},
}

// TestFastPathIsTheGeneralPath: on every case the fast paths leave the same
// cells, state, scrollback and snapshot as the general path, whole, split
// at every offset (inside sequences and UTF-8 characters), and byte by byte.
func TestFastPathIsTheGeneralPath(t *testing.T) {
	for _, tc := range fastPathCases {
		t.Run(tc.name, func(t *testing.T) {
			out := []byte(tc.out)
			fast, slow := twins(tc.w, tc.h, 2<<10)
			slow.Write(out)
			fast.Write(out)
			sameTerminal(t, "whole", fast, slow)

			splits := len(out)
			if splits > 200 {
				splits = 200
			}
			for cut := 1; cut < splits; cut++ {
				fast, _ := twins(tc.w, tc.h, 2<<10)
				feedAt(fast, out, cut)
				sameTerminal(t, fmt.Sprintf("split at %d", cut), fast, slow)
			}
			fast, _ = twins(tc.w, tc.h, 2<<10)
			for i := range out {
				fast.Write(out[i : i+1])
			}
			sameTerminal(t, "byte by byte", fast, slow)

			// The same after a resize and more output.
			fast.Resize(tc.w+3, tc.h+1)
			slow.Resize(tc.w+3, tc.h+1)
			fast.Write(out)
			slow.Write(out)
			sameTerminal(t, "after a resize", fast, slow)
		})
	}
}

// TestFastPathRandomOutput compares the two paths on random output with
// long ASCII runs, split at random places.
func TestFastPathRandomOutput(t *testing.T) {
	for i := range 200 {
		r := rand.New(rand.NewPCG(uint64(i), 11))
		w, h := 1+r.IntN(30), 1+r.IntN(10)
		out := []byte(genOutput(r, 60, w, h))
		fast, slow := twins(w, h, 1<<10)
		slow.Write(out)
		var cuts []int
		for range r.IntN(20) {
			cuts = append(cuts, r.IntN(len(out)+1))
		}
		sortInts(cuts)
		feedAt(fast, out, cuts...)
		sameTerminal(t, fmt.Sprintf("case %d (%dx%d, cuts %v)", i, w, h, cuts), fast, slow)
	}
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// FuzzFastPath: for any output, split anywhere, the fast paths and the
// general path leave identical terminals (cells, scrollback, snapshot).
func FuzzFastPath(f *testing.F) {
	for _, tc := range fastPathCases {
		if len(tc.out) < 2000 {
			f.Add([]byte(tc.out), uint8(tc.w), uint8(tc.h), uint16(len(tc.out)/2), uint16(1))
		}
	}
	for i := range 20 {
		r := rand.New(rand.NewPCG(uint64(i), 13))
		f.Add([]byte(genOutput(r, 40, 20, 6)), uint8(20), uint8(6), uint16(r.IntN(200)), uint16(r.IntN(50)))
	}
	f.Fuzz(func(t *testing.T, out []byte, w, h uint8, cut, step uint16) {
		cols, rows := 1+int(w)%60, 1+int(h)%30
		fast, slow := twins(cols, rows, 1<<10)
		slow.Write(out)
		// Pieces of step bytes after a first cut: chunk boundaries fall
		// inside sequences and characters.
		var cuts []int
		for c := int(cut); c < len(out) && len(cuts) < 1000; c += 1 + int(step) {
			cuts = append(cuts, c)
		}
		feedAt(fast, out, cuts...)
		sameTerminal(t, fmt.Sprintf("%dx%d cuts %v", cols, rows, cuts), fast, slow)
	})
}
