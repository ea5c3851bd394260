package sanitize

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termgate/termgate/internal/ring"
)

func TestStripQueries(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello\r\n", "hello\r\n"},
		{"dsr cursor position", "$ \x1b[6n", "$ "},
		{"dsr status", "a\x1b[5nb", "ab"},
		{"dec dsr", "a\x1b[?6nb", "ab"},
		{"da1 da2 da3", "\x1b[c\x1b[0c\x1b[>c\x1b[>0c\x1b[=cx", "x"},
		{"decrqm", "\x1b[?2004$px", "x"},
		{"xtversion", "\x1b[>qx", "x"},
		{"cursor style kept", "\x1b[2 qx", "\x1b[2 qx"},
		{"window report", "\x1b[18t\x1b[14;2tx", "x"},
		{"window op kept", "\x1b[8;24;80tx", "\x1b[8;24;80tx"},
		{"osc colour query bel", "\x1b]11;?\x07x", "x"},
		{"osc colour query st", "\x1b]10;?\x1b\\x", "x"},
		{"osc title kept", "\x1b]0;title\x07x", "\x1b]0;title\x07x"},
		{"decrqss", "\x1bP$qm\x1b\\x", "x"},
		{"xtgettcap", "\x1bP+q544e\x1b\\x", "x"},
		{"kitty keyboard query", "\x1b[?ux", "x"},
		{"enq", "a\x05b", "ab"},
		{"sgr kept", "\x1b[1;31mred\x1b[0m", "\x1b[1;31mred\x1b[0m"},
		{"modes kept", "\x1b[?1049h\x1b[?2004h", "\x1b[?1049h\x1b[?2004h"},
		{"charset kept", "\x1b(0lqk\x1b(B", "\x1b(0lqk\x1b(B"},
		{"incomplete csi at end kept", "ab\x1b[3", "ab\x1b[3"},
		{"incomplete osc at end kept", "ab\x1b]0;ti", "ab\x1b]0;ti"},
		{"utf8 kept", "héllo 世界 🙂", "héllo 世界 🙂"},
		// The introducer of a removed query also abandoned a sequence or
		// ended a string: ST takes its place, so "x" is still printed.
		{"esc esc", "\x1b\x1b[6nx", "\x1b\x1b\\x"},
		{"query after an aborted string", "\x1bXsos\x1b[6nx", "\x1bXsos\x1b\\x"},
		{"query after an aborted osc", "\x1b]0;t\x1b[cx", "\x1b]0;t\x1b\\x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(StripQueries([]byte(tt.in))); got != tt.want {
				t.Errorf("StripQueries(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSanitizeReplayStartsOnCleanBoundary(t *testing.T) {
	line := "\x1b[32m✓ 世界\x1b[0m ok\r\n"
	full := []byte(strings.Repeat(line, 20))
	for cut := range len(line) * 2 {
		got := Replay(full[cut:], cut > 0)
		if cut == 0 {
			if !bytes.Equal(got, full) {
				t.Fatal("an untruncated buffer must be replayed whole")
			}
			continue
		}
		if !bytes.HasPrefix(got, []byte("\x1b[32m✓")) {
			t.Fatalf("cut at %d: replay starts %q, want the start of a line", cut, got[:min(12, len(got))])
		}
		if !utf8.Valid(got) {
			t.Fatalf("cut at %d: replay is not valid UTF-8", cut)
		}
	}
}

func TestSanitizeReplayWithoutNewlines(t *testing.T) {
	// A progress bar redrawn with \r only: start at the next escape.
	got := Replay([]byte("\xa8\x9c50%\r\x1b[K 60%\r"), true)
	if string(got) != "\x1b[K 60%\r" {
		t.Fatalf("got %q", got)
	}
	got = Replay([]byte("\x96\x8cabc"), true)
	if string(got) != "abc" {
		t.Fatalf("got %q, want leading continuation bytes dropped", got)
	}
}

// TestReplayGolden pins the byte-exact replay of a wrapped ring holding a
// shell session with prompts that query the cursor position.
func TestReplayGolden(t *testing.T) {
	r := ring.New(256)
	for i := range 12 {
		r.Write([]byte("\x1b[1;34m~\x1b[0m $ \x1b[6necho ünïcode " + strings.Repeat("=", i) + "\r\nünïcode\r\n"))
	}
	got := Replay(r.Bytes(), r.Start() > 0) // what sessions' raw replayer sends
	golden := filepath.Join("testdata", "replay.golden")
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("replay = %q\nwant     %q", got, want)
	}
}

// FuzzSanitizeReplay: whatever the shell printed, the replay starts at a
// character boundary, never grows, and is stable: sanitizing it again finds
// nothing to remove, so the parser sees no query in its own output (the
// emulator oracle is FuzzReplayOracle in internal/replayoracle).
func FuzzSanitizeReplay(f *testing.F) {
	f.Add([]byte("$ \x1b[6n\r\n"), 3)
	f.Add([]byte("\x1b]11;?\x07日本語\r\n"), 1)
	f.Add([]byte("\x1bP$qm\x1b\\\x1b[?2004$p"), 0)
	f.Add([]byte("\xe4\xb8\x96\x1b[31m"), 1)
	for _, s := range []string{
		"\xc2\x9b6n", "\xc2\x9bc", "\xc2\x90$qm\xc2\x9c", "\xc2\x9d11;?\xc2\x9c",
		"\x1b]11;?\x1b[m", "\x1bP$q\"p\x1b[m", "\x1bP1$qm\x1b\\", "\x1bP$\rqm\x1b\\", "\x1b[?25$\rp",
		"\x1b[\x1b[6n6n", "\x1b]11\x1b[6n;?\x07", "\x1b]11\xc2\x9b;?\x07", "\x1b_Ga=q,i=1\x1b\\",
	} {
		f.Add([]byte("$ "+s+"\r\n"), 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		if cut < 0 || cut > len(data) {
			cut = 0
		}
		got := Replay(data[cut:], cut > 0)
		if len(got) > len(data)-cut {
			t.Fatalf("replay grew: %d > %d", len(got), len(data)-cut)
		}
		if cut > 0 && len(got) > 0 && got[0]&0xC0 == 0x80 {
			t.Fatalf("replay starts inside a UTF-8 sequence: %q", got)
		}
		if again := StripQueries(got); !bytes.Equal(again, got) {
			t.Fatalf("replay %q still holds a query: stripped again %q", got, again)
		}
		if bytes.Contains(got, []byte("\x1b[6n")) {
			t.Fatalf("query survived: %q", got)
		}
	})
}

// BenchmarkSanitizeReplay measures the sanitizer over a full default replay
// buffer (64 KiB) of coloured output, UTF-8 text and prompts with queries.
func BenchmarkSanitizeReplay(b *testing.B) {
	line := "\x1b[1;34m~/src\x1b[0m $ \x1b[6nls --color\r\n\x1b[32m✓ 世界 ünïcode\x1b[0m \x1b]0;title\x07ok\r\n"
	buf := bytes.Repeat([]byte(line), 64<<10/len(line)+1)[:64<<10]
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		Replay(buf, true)
	}
}
