package sessions

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jonboulle/clockwork"
)

var t0 = time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return t0 }

// feedSplit feeds b to a fresh marks in pieces cut at the given points.
func feedSplit(b []byte, cuts ...int) *marks {
	m := &marks{}
	prev := 0
	for _, c := range cuts {
		m.feed(b[prev:c], int64(prev), fixedNow)
		prev = c
	}
	m.feed(b[prev:], int64(prev), fixedNow)
	return m
}

func finished(m *marks) []FinishedCommand {
	c, _ := m.since(0)
	return c
}

// A bash session's marks give each command's text and exit status, and
// so does every split of it into two chunks (a mark, a command line or an
// escape cut anywhere); ST ends a mark as BEL does.
func TestOSC133SplitAnywhere(t *testing.T) {
	stream := []byte(shellRun("make", "cc -o x x.c\r\n", 0) +
		// readline: typo, backspace with erase, colours, a title
		"\x1b]133;A\x1b\\$ \x1b]133;B\x1b\\mka\b\b\x1b[Kake \x1b[1mtest\x1b[m\x1b]0;title\x07\r\n\x1b]133;C\x1b\\FAIL\r\n\x1b]133;D;2\x1b\\" +
		osc133("A") + "$ " + osc133("B") + "\r\n" + osc133("D;0") + // an empty line: no command
		shellRun("false", "", 1))
	check := func(t *testing.T, m *marks) {
		t.Helper()
		got := finished(m)
		want := []struct {
			cmd  string
			exit int
		}{{"make", 0}, {"make test", 2}, {"false", 1}}
		if len(got) != len(want) || m.total != 3 {
			t.Fatalf("finished %+v (total %d), want %v", got, m.total, want)
		}
		for i, w := range want {
			if got[i].Command != w.cmd || got[i].Exit != w.exit || !got[i].ExitKnown {
				t.Errorf("command %d: %q exit %d (known %v), want %q exit %d", i, got[i].Command, got[i].Exit, got[i].ExitKnown, w.cmd, w.exit)
			}
		}
	}
	check(t, feedSplit(stream))
	for cut := 1; cut < len(stream); cut++ {
		m := feedSplit(stream, cut)
		if t.Failed() {
			return
		}
		t.Run("", func(t *testing.T) { check(t, m) })
	}
	// One byte at a time.
	cuts := make([]int, 0, len(stream))
	for i := 1; i < len(stream); i++ {
		cuts = append(cuts, i)
	}
	check(t, feedSplit(stream, cuts...))
}

// Through a session: the pump reads the marks in whatever pieces the
// shell's writes arrive.
func TestOSC133AcrossChunksInASession(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r, fb := newTestRegistry(t, Config{Clock: clock, IdleTimeout: 24 * time.Hour})
	ann := attach(t, r, "web1", AttachOptions{Who: "ann"})
	bob := attach(t, r, "web1", AttachOptions{Who: "bob"})
	defer bob.Detach()
	ann.Detach()
	clock.Advance(time.Minute)
	p := fb.last()
	out := shellRun("sleep 1 && echo done", "done\r\n", 0)
	for _, piece := range []string{out[:3], out[3:20], out[20:21], out[21:]} {
		p.emit(piece)
	}
	if _, err := readAtLeast(t, bob, len(out)); err != nil {
		t.Fatal(err)
	}
	back := attach(t, r, "web1", AttachOptions{Who: "ann"})
	defer back.Detach()
	_, away := readEvent[*Away](t, back)
	if len(away.Commands) != 1 || away.Commands[0].Command != "sleep 1 && echo done" || !away.Commands[0].At.Equal(clock.Now()) {
		t.Fatalf("got %v (%+v), want one command, \"sleep 1 && echo done\", finished now", away, away)
	}
}

// A hostile shell cannot grow the state: endless parameters, a command
// line that never ends, a flood of finished commands, marks inside marks.
func TestOSC133FloodStaysBounded(t *testing.T) {
	m := &marks{}
	off := int64(0)
	feed := func(s string) {
		m.feed([]byte(s), off, fixedNow)
		off += int64(len(s))
	}
	feed("\x1b]133;D;" + strings.Repeat("9", 1<<20) + "\x07") // parameters past oscParamMax: ignored
	feed(osc133("B") + strings.Repeat("x", 1<<20))            // echo past cmdRawMax: the text is unknown
	feed(osc133("C") + osc133("D;7"))
	if got := finished(m); len(got) != 1 || got[0].Command != "" || got[0].Exit != 7 {
		t.Fatalf("after a long echo: %+v, want one command without text, exit 7", got)
	}
	feed(osc133("B") + strings.Repeat("é", 1000) + osc133("C") + osc133("D;0")) // clipped to 200 characters
	if got := finished(m); utf8.RuneCountInString(got[1].Command) != cmdCells+1 {
		t.Fatalf("a long command line: %d characters, want %d and an ellipsis", utf8.RuneCountInString(got[1].Command), cmdCells)
	}
	var b strings.Builder
	for range 100000 {
		b.WriteString(osc133("B") + "cmd" + osc133("C") + "\x1b]133;D;1\x1b\\" + "\x1b]133;\x1b]133;D\x07")
	}
	feed(b.String())
	if m.total != 100002 || len(finished(m)) != keptCommands {
		t.Fatalf("after 100000 commands: total %d, %d kept; want 100002 and %d", m.total, len(finished(m)), keptCommands)
	}
	for _, c := range finished(m) {
		if c.Command != "cmd" || c.Exit != 1 {
			t.Fatalf("kept %+v, want cmd exit 1", c)
		}
	}
	// Output without marks costs no allocation.
	plain := []byte(strings.Repeat("no marks here \x1b[1m\x1b]0;t\x07 ", 1000))
	if n := testing.AllocsPerRun(100, func() { m.feed(plain, 0, fixedNow) }); n != 0 {
		t.Errorf("%v allocations per chunk without marks, want 0", n)
	}
}

// Marks the summary cannot use are ignored; the exit status is read only
// from digits.
func TestOSC133Odd(t *testing.T) {
	for _, tc := range []struct {
		in    string
		total uint64
		exit  int
		known bool
	}{
		{osc133("C") + osc133("D"), 1, 0, false},
		{osc133("C") + osc133("D;-1"), 1, 0, false},
		{osc133("C") + osc133("D;130;aid=42"), 1, 130, true},
		{osc133("C") + osc133("Dx;1"), 0, 0, false},
		{osc133("C") + "\x1b]133;D;1\x18" + osc133("D;3"), 1, 3, true},   // CAN aborts the first
		{osc133("C") + "\x1b]133;D;1\x1b[m" + osc133("D;4"), 1, 4, true}, // so does an ESC
		{osc133("D;1"), 0, 0, false},
	} {
		m := feedSplit([]byte(tc.in))
		got := finished(m)
		if m.total != tc.total || (tc.total == 1 && (got[0].Exit != tc.exit || got[0].ExitKnown != tc.known)) {
			t.Errorf("%q: total %d %+v, want %d exit %d known %v", tc.in, m.total, got, tc.total, tc.exit, tc.known)
		}
	}
}

// FuzzOSC133: whatever the shell prints, in whatever pieces, the marks
// stay bounded, the command lines printable and the result the same as
// for the whole stream at once.
func FuzzOSC133(f *testing.F) {
	f.Add([]byte(shellRun("make", "ok\r\n", 0)), uint16(7))
	f.Add([]byte("\x1b]133;B\x1b\\ls\b\x1b[K\x1b[2Dx\x1b[@y\x1b[P\r\n\x1b]133;C\x07\x1b]133;D;1\x07"), uint16(3))
	f.Add([]byte("\x1b]133;\x1b]133;B\xe2\x80\xae\xc2\x9bz\x1b]133;C\x07\x1b]133;D;99999999999\x07"), uint16(12))
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		whole := feedSplit(b)
		c := int(cut) % (len(b) + 1)
		split := feedSplit(b, c)
		if whole.total != split.total {
			t.Fatalf("total %d whole, %d split at %d", whole.total, split.total, c)
		}
		wc, sc := finished(whole), finished(split)
		if len(wc) > keptCommands {
			t.Fatalf("%d commands kept", len(wc))
		}
		for i := range wc {
			if wc[i].Command != sc[i].Command || wc[i].Exit != sc[i].Exit {
				t.Fatalf("command %d: %+v whole, %+v split at %d", i, wc[i], sc[i], c)
			}
			cmd := wc[i].Command
			if !utf8.ValidString(cmd) || utf8.RuneCountInString(cmd) > cmdCells+1 {
				t.Fatalf("command text %q", cmd)
			}
			for _, r := range cmd {
				if r < 0x20 || (r >= 0x7f && r < 0xa0) {
					t.Fatalf("control %U in command text %q", r, cmd)
				}
			}
		}
	})
}

// BenchmarkOSC133Plain: what following the marks costs the pump for a
// 64 KiB chunk of output without marks, and with a command's marks in it.
func BenchmarkOSC133Plain(b *testing.B) {
	plain := []byte(strings.Repeat("some build output, \x1b[1mbold\x1b[m and all\r\n", 64<<10/42))
	marked := append([]byte(shellRun("make", "", 0)), plain...)
	for _, bc := range []struct {
		name  string
		chunk []byte
	}{{"plain", plain}, {"marked", marked}} {
		b.Run(bc.name, func(b *testing.B) {
			m := &marks{}
			b.SetBytes(int64(len(bc.chunk)))
			for b.Loop() {
				m.feed(bc.chunk, 0, fixedNow)
			}
		})
	}
}
