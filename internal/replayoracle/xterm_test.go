package replayoracle

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/termgate/termgate/screen/sanitize"
)

// xtermOracle is the page's own terminal, xterm.js (its headless build, the
// same version), run by node: xterm_oracle.mjs.
type xtermOracle struct {
	in  io.WriteCloser
	out io.Reader
}

// startXterm starts the oracle, or skips the test without node and the
// bundle's packages (fails with TERMGATE_REQUIRE_CHROMIUM=1, as CI sets for
// the browser stack).
func startXterm(t *testing.T) *xtermOracle {
	t.Helper()
	miss := func(why string) {
		t.Helper()
		if os.Getenv("TERMGATE_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("TERMGATE_REQUIRE_CHROMIUM=1 but " + why)
		}
		t.Skip(why + " (set TERMGATE_REQUIRE_CHROMIUM=1 to make this a failure)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		miss("node is not installed")
	}
	web, err := filepath.Abs(filepath.Join("..", "..", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "@xterm", "headless")); err != nil {
		miss("@xterm/headless is not installed: run `make web` (npm ci in web/)")
	}
	cmd := exec.CommandContext(t.Context(), node, "xterm_oracle.mjs", filepath.Join(web, "package.json"))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the xterm.js oracle: %v", err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		if err := cmd.Wait(); err != nil && t.Context().Err() == nil {
			t.Errorf("the xterm.js oracle: %v", err)
		}
	})
	return &xtermOracle{in: in, out: out}
}

// answers returns what xterm.js, having read held, answers to out.
func (x *xtermOracle) answers(t *testing.T, held, out []byte) []byte {
	t.Helper()
	a, _ := x.run(t, held, out)
	return a
}

// run returns what xterm.js, having read held, answers to out, and what it
// shows then: its viewport's rows and its cursor.
func (x *xtermOracle) run(t *testing.T, held, out []byte) (answers []byte, shows string) {
	t.Helper()
	var req []byte
	req = binary.BigEndian.AppendUint32(req, uint32(len(held)))
	req = append(req, held...)
	req = binary.BigEndian.AppendUint32(req, uint32(len(out)))
	req = append(req, out...)
	if _, err := x.in.Write(req); err != nil {
		t.Fatalf("write to the xterm.js oracle: %v", err)
	}
	return x.frame(t), string(x.frame(t))
}

func (x *xtermOracle) frame(t *testing.T) []byte {
	t.Helper()
	var head [4]byte
	if _, err := io.ReadFull(x.out, head[:]); err != nil {
		t.Fatalf("read from the xterm.js oracle: %v", err)
	}
	got := make([]byte, binary.BigEndian.Uint32(head[:]))
	if _, err := io.ReadFull(x.out, got); err != nil {
		t.Fatalf("read from the xterm.js oracle: %v", err)
	}
	return got
}

// TestXtermAnswersNoReplay: the page's terminal answers the forms the red
// team replayed into Chromium (issue 9 item 1) as printed, and nothing once
// sanitized; nor to thousands of generated outputs, replayed or resumed.
func TestXtermAnswersNoReplay(t *testing.T) {
	x := startXterm(t)
	answered := []string{ // xterm.js answers each as printed
		"\xc2\x9b6n", "\xc2\x9bc", "\xc2\x90$qm\xc2\x9c", "\x1bP$q\"p\x1b[m",
		"\x1bP1$qm\x1b\\", "\x1bP$\rqm\x1b\\", "\x1b[?25$\rp", "\x1b[?25$p", "\x1b[6n",
		"\x1b[>c", "\x1b[?6n", "\x1b[6\x1b[6n",
	}
	for _, f := range append(answered, forms...) {
		raw := []byte("$ " + f + "$ ")
		if a := x.answers(t, nil, raw); len(a) == 0 && contains(answered, f) {
			t.Errorf("xterm.js does not answer %q: the oracle cannot see this form", f)
		}
		if a := x.answers(t, nil, sanitize.Replay(raw, false)); len(a) > 0 {
			t.Errorf("replay of %q made xterm.js answer %q", f, a)
		}
	}

	// Generated outputs, from the pieces queries are made of.
	pieces := []string{
		"\x1b", "[", "]", "P", "_", "X", "\\", "?", ">", "=", "$", "+", "'", "\"", "*", "#", " ",
		"0", "1", "6", "11", "25", ";", ":", "c", "n", "p", "q", "t", "u", "m", "x", "y", "Z", "G", "a=q,i=1",
		"\x07", "\x18", "\x1a", "\r", "\n", "\x05", "\x00", "\x7f",
		"\xc2\x9b", "\xc2\x9c", "\xc2\x9d", "\xc2\x90", "\xc2\x9a", "\x9b", "\x9c", "\xc5", "é", "世",
	}
	rng := rand.New(rand.NewPCG(9, 1))
	n := 400
	if testing.Short() {
		n = 150
	}
	queries := 0
	for range n {
		// Noise, a known query with pieces thrown in, noise.
		noise := func(b []byte) []byte {
			for range rng.IntN(6) {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
			return b
		}
		b := noise(nil)
		q := []byte(answered[rng.IntN(len(answered))])
		for range rng.IntN(3) {
			at := rng.IntN(len(q) + 1)
			q = append(q[:at:at], append([]byte(pieces[rng.IntN(len(pieces))]), q[at:]...)...)
		}
		b = noise(append(b, q...))
		if len(x.answers(t, nil, b)) > 0 {
			queries++
		}
		if out := sanitize.Replay(b, false); len(x.answers(t, nil, out)) > 0 {
			t.Fatalf("replay %q of %q made xterm.js answer %q", out, b, x.answers(t, nil, out))
		}
		from := rng.IntN(len(b) + 1)
		out := sanitize.StripQueriesFrom(b, from)
		if a := x.answers(t, b[:from], out); len(a) > 0 {
			t.Fatalf("after %q, the resume %q made xterm.js answer %q", b[:from], out, a)
		}
	}
	t.Logf("%d generated outputs, %d answered by xterm.js as printed, none once sanitized", n, queries)
	if queries < n/20 {
		t.Errorf("only %d of %d generated outputs are queries: the generator no longer exercises the sanitizer", queries, n)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
