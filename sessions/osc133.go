package sessions

import (
	"bytes"
	"time"
)

// Shells with shell integration (FinalTerm, iTerm2, VS Code; bash through
// PROMPT_COMMAND and PS0, zsh hooks, fish) mark their prompts in the
// output with OSC 133: "ESC ] 133 ; A" prompt start, "; B" command start
// (the prompt ends, what the user types is echoed next), "; C" output
// start (the command runs), "; D [; exit]" command finished, each ended by
// BEL or ST (ESC \). marks follows them in the pump path, so the away
// summary (away.go) can say which commands finished while someone was
// gone and how they ended.
//
// The instance is untrusted: marks keeps a fixed amount of state whatever
// it prints (a parameter buffer, one command line of at most cmdCells
// cells, keptCommands finished commands), and looks at the bytes between
// marks only with bytes.Index, except for the echoed command line, of
// which it reads at most cmdRawMax bytes.

// oscIntro starts every mark.
const oscIntro = "\x1b]133;"

const (
	// oscParamMax bounds a mark's parameters ("D;130;aid=…"): a longer
	// one is not a mark we know, and is ignored.
	oscParamMax = 64
	// cmdRawMax bounds the echoed bytes between B and C that are read for
	// the command line; past it the command's text is unknown.
	cmdRawMax = 4096
	// cmdCells is the longest command line kept, in characters (the
	// summary clips to it).
	cmdCells = 200
	// keptCommands is how many finished commands a session remembers.
	keptCommands = 32
)

// FinishedCommand is a command the shell marked as finished (OSC 133 D).
type FinishedCommand struct {
	// Command is the command line as echoed between the B and C marks,
	// without escapes and clipped to 200 characters; empty when it could
	// not be recovered.
	Command string
	// Exit is the exit status the D mark carried; ExitKnown is false when
	// it carried none.
	Exit      int
	ExitKnown bool
	// Offset is the output offset of the D mark; At is when it was read.
	Offset int64
	At     time.Time

	seq uint64 // 1 for the session's first finished command
}

// marks is the OSC 133 state of one session's output. Guarded by
// awayBook.mu (the pump feeds it from deliver, after relay; away.go).
type marks struct {
	intro int  // bytes of oscIntro matched at the end of the last chunk
	inSeq bool // inside a mark, after oscIntro: its parameters follow
	esc   bool // inside a mark, the last byte was ESC (ST if '\\' follows)
	long  bool // the mark's parameters overflowed param: ignored
	plen  int
	param [oscParamMax]byte

	echo    cmdLine // the command line being echoed, between B and C
	echoing bool    // after B, before C
	running bool    // after C, before D: a command runs
	cmd     string  // the running command's text

	seen  bool   // the shell marks its prompts
	total uint64 // commands finished so far
	done  [keptCommands]FinishedCommand
}

// feed reads one chunk of output whose first byte has offset off; now is
// asked for the time only when a command finished.
func (m *marks) feed(chunk []byte, off int64, now func() time.Time) {
	i := 0
	for i < len(chunk) {
		switch {
		case m.inSeq:
			i += m.param1(chunk[i:], off+int64(i), now)
		case m.intro > 0:
			i += m.resumeIntro(chunk[i:])
		default:
			rest := chunk[i:]
			k := bytes.Index(rest, []byte(oscIntro))
			if k < 0 {
				// The tail may begin a mark that the next chunk finishes.
				k = len(rest) - partialIntro(rest)
				m.echoBytes(rest[:k])
				m.intro = len(rest) - k
				return
			}
			m.echoBytes(rest[:k])
			m.startSeq()
			i += k + len(oscIntro)
		}
	}
}

// partialIntro is the length of the longest tail of b that begins oscIntro
// (and is shorter than it).
func partialIntro(b []byte) int {
	for n := min(len(oscIntro)-1, len(b)); n > 0; n-- {
		if bytes.HasSuffix(b, []byte(oscIntro[:n])) {
			return n
		}
	}
	return 0
}

// resumeIntro goes on matching oscIntro at the start of b after a chunk
// ended inside it, and returns the bytes it consumed.
func (m *marks) resumeIntro(b []byte) int {
	want := oscIntro[m.intro:]
	n := min(len(want), len(b))
	if string(b[:n]) != want[:n] {
		// Not a mark after all: the held bytes were ordinary output
		// (they begin with ESC, which oscIntro holds only first, so no
		// mark starts inside them).
		m.echoBytes([]byte(oscIntro[:m.intro]))
		m.intro = 0
		return 0
	}
	m.intro += n
	if m.intro == len(oscIntro) {
		m.intro = 0
		m.startSeq()
	}
	return n
}

func (m *marks) startSeq() {
	m.inSeq, m.esc, m.long, m.plen = true, false, false, 0
}

// param1 reads a mark's parameters up to its terminator and returns the
// bytes it consumed. A mark ends with BEL or ST; CAN, SUB or an ESC that
// does not start ST abort it, as a terminal does (the ESC then starts
// whatever follows, so it is not consumed).
func (m *marks) param1(b []byte, off int64, now func() time.Time) int {
	for i, c := range b {
		if m.esc {
			m.esc = false
			m.inSeq = false
			if c == '\\' {
				m.mark(off+int64(i), now)
				return i + 1
			}
			// The ESC before c starts another sequence: the scanner
			// reads it again (the previous chunk's, as a partial intro).
			if i > 0 {
				return i - 1
			}
			m.intro = 1
			return 0
		}
		switch c {
		case 0x07:
			m.inSeq = false
			m.mark(off+int64(i), now)
			return i + 1
		case 0x1b:
			m.esc = true
		case 0x18, 0x1a:
			m.inSeq = false
			return i + 1
		default:
			if m.plen == len(m.param) {
				m.long = true
			} else {
				m.param[m.plen] = c
				m.plen++
			}
		}
	}
	return len(b)
}

// mark acts on a complete mark, at offset off.
func (m *marks) mark(off int64, now func() time.Time) {
	if m.long || m.plen == 0 {
		return
	}
	p := m.param[:m.plen]
	kind, args := p[0], p[1:]
	if len(args) > 0 && args[0] != ';' {
		return // "Ax": not a mark we know
	}
	m.seen = true
	switch kind {
	case 'A': // a prompt: whatever was echoed is no command (Ctrl-C, a redraw)
		m.echoing = false
	case 'B':
		m.echoing = true
		m.echo.reset()
	case 'C':
		m.cmd = ""
		if m.echoing {
			m.cmd = m.echo.text()
		}
		m.echoing, m.running = false, true
	case 'D':
		// A D with no C before it ends no command: bash's PROMPT_COMMAND
		// marks every prompt, an empty line's too.
		if !m.running {
			return
		}
		m.running = false
		m.total++
		fc := FinishedCommand{Command: m.cmd, Offset: off, At: now(), seq: m.total}
		fc.Exit, fc.ExitKnown = exitCode(args)
		m.done[m.total%keptCommands] = fc
		m.cmd = ""
	}
}

// exitCode reads the exit status from a D mark's ";N[;…]".
func exitCode(args []byte) (int, bool) {
	if len(args) < 2 {
		return 0, false
	}
	args = args[1:]
	if k := bytes.IndexByte(args, ';'); k >= 0 {
		args = args[:k]
	}
	if len(args) == 0 || len(args) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range args {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// echoBytes gives output between marks to the command line while one is
// echoed.
func (m *marks) echoBytes(b []byte) {
	if m.echoing && len(b) > 0 {
		m.echo.write(b)
	}
}

// since returns the commands that finished after the seq-th one, oldest
// first, as far as they are kept, and how many finished in all.
func (m *marks) since(seq uint64) ([]FinishedCommand, int) {
	n := m.total - seq
	var out []FinishedCommand
	for s := max(seq+1, m.total-min(m.total, keptCommands-1)); s <= m.total && s > seq; s++ {
		out = append(out, m.done[s%keptCommands])
	}
	return out, int(n)
}
