package replayoracle

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/vt"
	"go.uber.org/goleak"

	"github.com/termgate/termgate/screen/sanitize"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// oracle is one emulator reused for every input: a new one costs a 4 MiB
// parser buffer (12 ms), which would make fuzzing crawl. A full reset (RIS)
// separates the inputs.
type oracle struct {
	emu  *vt.Emulator
	pw   *io.PipeWriter
	mark chan []byte   // what was answered up to a marker
	done chan struct{} // closed when the drain goroutine has ended
}

// shared is created by the first test that needs it and closed by TestMain;
// the tests and the fuzz target run one at a time.
var shared *oracle

// marker is written into the answer pipe after each input; vt never answers
// 0xFF bytes.
var marker = []byte("\xff\x00replayoracle\x00\xff")

// answers feeds out to a freshly reset emulator and returns what it
// answered. The emulator writes its answers synchronously into a pipe, so
// Write blocks until a reader takes them: a goroutine drains them.
func answers(t testing.TB, out []byte) []byte {
	t.Helper()
	return answersAfter(t, nil, out)
}

// answersAfter is answers for a resume: the emulator first reads held (what
// the client already had; its answers are not counted), then out.
func answersAfter(t testing.TB, held, out []byte) []byte {
	t.Helper()
	if shared == nil {
		emu := vt.NewEmulator(80, 24)
		pw, ok := emu.InputPipe().(*io.PipeWriter)
		if !ok {
			t.Fatalf("vt's answer pipe is a %T, not an *io.PipeWriter: update answers()", emu.InputPipe())
		}
		shared = &oracle{emu: emu, pw: pw, mark: make(chan []byte), done: make(chan struct{})}
		go shared.drain()
	}
	o := shared
	// CAN ends any string or sequence (after filling a UTF-8 character cut
	// short), RIS resets modes and screen.
	_, _ = o.emu.Write([]byte("\x18\x18\x18\x18\x1bc"))
	_, _ = o.emu.Write(held)
	o.sync()
	_, _ = o.emu.Write(out)
	return o.sync()
}

// sync returns what was answered since the last sync: the marker travels the
// pipe behind every answer.
func (o *oracle) sync() []byte {
	_, _ = o.pw.Write(marker)
	return <-o.mark
}

func (o *oracle) drain() {
	defer close(o.done)
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := o.emu.Read(buf)
		got = append(got, buf[:n]...)
		if bytes.HasSuffix(got, marker) {
			o.mark <- bytes.Clone(got[:len(got)-len(marker)])
			got = got[:0]
		}
		if err != nil {
			return
		}
	}
}

// close ends the drain goroutine. Emulator.Close would race with its Read on
// the emulator's closed flag; closing the pipe's writer end does the same.
func (o *oracle) close() {
	_ = o.pw.CloseWithError(io.EOF)
	<-o.done
}

// xtermView is how xterm.js sees bytes: it decodes UTF-8 first and then acts
// on C1 code points as controls, while invalid bytes become U+FFFD. vt's
// parser acts on raw C1 bytes instead, so feeding it this view makes it
// answer what xterm.js would.
func xtermView(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n == 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		case r >= 0x80 && r < 0xA0:
			out = append(out, byte(r))
		default:
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// forms are the shapes of issue 9 item 1 that vt answers, each printed by a
// program while no client was attached.
var forms = []string{
	"\x1b[6n", "\x1b[5n", "\x1b[?6n", "\x1b[c", "\x1b[>c", "\x1b[?25$p", "\x1b[4$p",
	"\x1b]10;?\x07", "\x1b]11;?\x1b\\", "\x1b]12;?\x07", "\x1b[?2048h",
	"\xc2\x9b6n", "\xc2\x9bc", "\xc2\x9d11;?\xc2\x9c", "\xc2\x9b?1$p",
	"\x1b]11;?\x1b[m", "\x1b[6\x1b[6n", "\x1b]11\x1b[6n;?\x07",
}

// TestOracleAnswersQueriesNotReplays: the emulator answers each query form
// as printed (in its own view or in xterm.js's), so the oracle can see a
// query; and it answers nothing once the replay is sanitized.
func TestOracleAnswersQueriesNotReplays(t *testing.T) {
	for _, f := range forms {
		raw := []byte("$ echo hi\r\nhi\r\n" + f + "$ ")
		if len(answers(t, raw)) == 0 && len(answers(t, xtermView(raw))) == 0 {
			t.Errorf("the emulator does not answer %q: the oracle cannot see this form", f)
		}
		replay := sanitize.Replay(raw, false)
		if a := answers(t, replay); len(a) > 0 {
			t.Errorf("replay of %q made the emulator answer %q", f, a)
		}
		if a := answers(t, xtermView(replay)); len(a) > 0 {
			t.Errorf("replay of %q made the emulator answer %q as xterm.js sees it", f, a)
		}
	}
}

// FuzzReplayOracle: whatever a program printed, the emulator answers nothing
// to its sanitized replay, read as bytes or as xterm.js decodes them.
func FuzzReplayOracle(f *testing.F) {
	for _, s := range forms {
		f.Add([]byte("$ "+s+"\r\n"), 0)
	}
	// vt does not answer these (it loses the intermediate of a CSI with a
	// C0 inside, and has no DECRQSS), xterm.js does.
	f.Add([]byte("\x1bP$q\"p\x1b[m\x1bP1$qm\x1b\\\x1bP$\rqm\x1b\\\x1b[?25$\rp"), 0)
	f.Add([]byte("\x1b]0;title\x07\x1b[1;31mred\x1b[0m\r\n\x1b[?1049h"), 3)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		if cut < 0 || cut > len(data) {
			cut = 0
		}
		replay := sanitize.Replay(data[cut:], cut > 0)
		if a := answers(t, replay); len(a) > 0 {
			t.Fatalf("replay %q made the emulator answer %q", replay, a)
		}
		if a := answers(t, xtermView(replay)); len(a) > 0 {
			t.Fatalf("replay %q made the emulator answer %q as xterm.js sees it", replay, a)
		}
	})
}

// FuzzResumeOracle: a client that held data[:from] when it left and resumes
// gets StripQueriesFrom(data, from); the emulator, having read what the
// client held, answers nothing to it.
func FuzzResumeOracle(f *testing.F) {
	f.Add([]byte("$ \x1b[6n$ "), 4)
	f.Add([]byte("\x1b]11;?\x07x"), 5)
	f.Add([]byte("\xc2\x9b6nx"), 1)
	f.Add([]byte("\x1b[?25$p"), 3)
	f.Add([]byte("ab\x1b]11;?"), 9)
	f.Fuzz(func(t *testing.T, data []byte, from int) {
		if from < 0 || from > len(data) {
			return
		}
		held := data[:from]
		out := sanitize.StripQueriesFrom(data, from)
		if a := answersAfter(t, held, out); len(a) > 0 {
			t.Fatalf("after %q, %q made the emulator answer %q", held, out, a)
		}
		if !endsOnCharacter(held) {
			return // xterm.js decodes a character cut in two as one: no split view
		}
		if a := answersAfter(t, xtermView(held), xtermView(out)); len(a) > 0 {
			t.Fatalf("after %q, %q made the emulator answer %q as xterm.js sees it", held, out, a)
		}
	})
}

// endsOnCharacter reports whether b does not end inside a UTF-8 character.
func endsOnCharacter(b []byte) bool {
	i := len(b) - 1
	for i > 0 && len(b)-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	return i < 0 || utf8.FullRune(b[i:])
}
