package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"github.com/termgate/termgate/screen"
	"github.com/termgate/termgate/screen/sanitize"
)

// view is what an independent emulator (charmbracelet/x/vt) shows after a
// client's whole output: the screen's text, the screen in use, the cursor
// and the cursor keys mode.
type view struct {
	text      string
	alt       bool
	appCursor bool
	cursor    string
}

func (v view) String() string {
	return fmt.Sprintf("alt=%v appCursor=%v cursor=%s\n%s", v.alt, v.appCursor, v.cursor, v.text)
}

func emulate(out []byte, cols, rows int) view {
	e := vt.NewEmulator(cols, rows)
	// x/vt blocks on a query until its answer is read (and its Close races
	// that read): the live output's queries are left out instead.
	out = sanitize.StripQueries(out)
	var v view
	e.SetCallbacks(vt.Callbacks{
		EnableMode: func(m ansi.Mode) {
			if m == ansi.ModeCursorKeys {
				v.appCursor = true
			}
		},
		DisableMode: func(m ansi.Mode) {
			if m == ansi.ModeCursorKeys {
				v.appCursor = false
			}
		},
	})
	_, _ = e.Write(out)
	v.alt = e.IsAltScreen()
	p := e.CursorPosition()
	v.cursor = fmt.Sprintf("%d,%d", p.X, p.Y)
	lines := strings.Split(e.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	v.text = strings.Join(lines, "\n")
	return v
}

// emulateOurs is emulate with package screen's emulator.
func emulateOurs(out []byte, cols, rows int) view {
	e := screen.New(cols, rows, 1<<20)
	_, _ = e.Write(out)
	x, y := e.Cursor()
	return view{text: e.Text(), alt: e.AltScreen(), appCursor: e.AppCursorKeys(), cursor: fmt.Sprintf("%d,%d", x, y)}
}

// sameView waits until the two outputs show the same view and returns it.
func sameView(t *testing.T, what string, a, b func() []byte) view {
	t.Helper()
	return sameViewWith(t, what, emulate, a, b)
}

func sameViewWith(t *testing.T, what string, emulate func([]byte, int, int) view, a, b func() []byte) view {
	t.Helper()
	return sameViewWhere(t, what, emulate, a, b, nil)
}

// sameViewWhere is sameViewWith for a view that also satisfies done (nil:
// any view): a program that redraws (top) is caught between two chunks of
// a redraw as often as not, where both clients show the same half-drawn
// screen; the test then waits for a whole one rather than take the first
// match (issue 20 item 9: "the screen compared is not top's" under load).
func sameViewWhere(t *testing.T, what string, emulate func([]byte, int, int) view, a, b func() []byte, done func(view) bool) view {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		va, vb := emulate(a(), 80, 24), emulate(b(), 80, 24)
		if va == vb && (done == nil || done(va)) {
			return va
		}
		if time.Now().After(deadline) {
			if va == vb {
				t.Fatalf("%s: both clients show, for %s, a screen that is not the one expected:\n%s", what, waitFor, va)
			}
			t.Fatalf("%s: the reattached client shows\n%s\nwhile the client that never left shows\n%s", what, vb, va)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Issue 8: a client reattaching to busybox vi, whose switch to the
// alternate screen left the 16 KiB ring long ago, comes back to the screen
// a client that never left sees (alternate screen and cursor keys mode
// included), over WebSocket and SSH; quitting vi after the reattach shows
// the shell's main screen as it was.
func TestScreenReplayVi(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}, args: []string{"--buffer-size", "16KiB"}})
	name := g.name("web-1")

	stay := g.wsQuery(t, name, "cols=80&rows=24")
	stay.roundTrip()
	stay.send("printf '\\033[?1h'; echo BEFORE-VI-$((40+2))")
	stay.expect(`BEFORE-VI-42`)
	ws := g.wsQuery(t, name, "cols=80&rows=24")
	ssh := g.attach(t, keyAdmin, name, 80, 24)
	ws.expect(`BEFORE-VI-42`)
	ssh.expect(`BEFORE-VI-42`)
	closeWS(ws)
	ssh.close()
	g.waitClients(t, name, 1)

	stay.send("vi /tmp/screen.txt")
	// Type only once vi has switched to the alternate screen (and so put
	// the terminal in raw mode): keys typed before that are echoed by the
	// terminal onto the main screen, which is then not the shell's as
	// before when vi quits.
	stay.expect(`\x1b\[\?1049h`)
	stay.expect(`~`) // its first screen is drawn: vi reads keys now
	// About 48 KiB of redraws: vi's ESC[?1049h leaves the 16 KiB ring.
	var typed strings.Builder
	typed.WriteString("i")
	for i := range 1000 {
		fmt.Fprintf(&typed, "line %03d of text that vi draws again and again as the screen scrolls\r", i)
	}
	typed.WriteString("\x1b")
	if err := writeWS(stay, typed.String()); err != nil {
		t.Fatal(err)
	}
	// On the screen, not in the raw output: vi redraws a line by writing
	// only the columns that changed ("line 998" becomes "line 999" by an
	// ESC[11;6H999), so the words need not ever be written in one piece.
	for deadline := time.Now().Add(waitFor); !strings.Contains(emulate(stay.out.Bytes(), 80, 24).text, "line 999 of text"); {
		if time.Now().After(deadline) {
			t.Fatalf("vi's screen shows no \"line 999 of text\" within %s:\n%s", waitFor, emulate(stay.out.Bytes(), 80, 24))
		}
		time.Sleep(100 * time.Millisecond)
	}
	info, _ := g.session(t, name)
	if info.BytesOut < 48<<10 {
		t.Fatalf("only %d bytes of output: vi's switch to the alternate screen may still be in the ring", info.BytesOut)
	}

	ws2 := g.wsQuery(t, name, "cols=80&rows=24")
	v := sameView(t, "vi over WebSocket", stay.out.Bytes, ws2.out.Bytes)
	if !v.alt || !v.appCursor || !strings.Contains(v.text, "line 999 of text") {
		t.Fatalf("the screen compared is not vi's on the alternate screen with cursor keys mode:\n%s", v)
	}
	ssh2 := g.attach(t, keyAdmin, name, 80, 24)
	sameView(t, "vi over SSH", stay.out.Bytes, ssh2.out.Bytes)

	// Quit vi from the reattached client: the main screen comes back.
	if err := writeWS(ws2, ":q!\r"); err != nil {
		t.Fatal(err)
	}
	stay.expect(`\x1b\[\?1049l`)
	ws2.expect(`\x1b\[\?1049l`)
	// x/vt v0.1.0 sometimes shows vi's text on the main screen after ?1049l
	// even for the client that never left (seen in this test), so the main
	// screen is checked with package screen's emulator.
	v = sameViewWith(t, "after quitting vi (WebSocket)", emulateOurs, stay.out.Bytes, ws2.out.Bytes)
	sameViewWith(t, "after quitting vi (SSH)", emulateOurs, stay.out.Bytes, ssh2.out.Bytes)
	if v.alt || !strings.Contains(v.text, "BEFORE-VI-42") {
		o := stay.out.Bytes()
		for _, m := range regexp.MustCompile(`\x1b\[\?1049[hl]`).FindAllIndex(o, -1) {
			t.Logf("alternate-screen switch at byte %d: %q", m[0], o[max(0, m[0]-150):min(len(o), m[1]+150)])
		}
		t.Fatalf("after quitting vi the main screen is not the shell's as before:\n%s", v)
	}
}

// Issue 8: busybox top reattached over WebSocket and SSH comes back whole.
func TestScreenReplayTop(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}, args: []string{"--buffer-size", "16KiB"}})
	name := g.name("web-1")

	stay := g.wsQuery(t, name, "cols=80&rows=24")
	stay.roundTrip()
	stay.send("top -d 1")
	stay.expect(`PID`)
	stay.expect(`Mem:`) // a second screen
	ws := g.wsQuery(t, name, "cols=80&rows=24")
	// Compared once both show a whole screen of top's: its header, its
	// column titles and itself among the processes (a redraw comes in
	// several chunks, and under load the clients are often caught between
	// two of them with the same half-drawn screen).
	whole := func(v view) bool {
		return strings.Contains(v.text, "PID") && strings.Contains(v.text, "Mem:") && strings.Contains(v.text, "top -d 1")
	}
	sameViewWhere(t, "top over WebSocket", emulate, stay.out.Bytes, ws.out.Bytes, whole)
	ssh := g.attach(t, keyAdmin, name, 80, 24)
	sameView(t, "top over SSH", stay.out.Bytes, ssh.out.Bytes)
	if err := writeWS(ws, "q"); err != nil {
		t.Fatal(err)
	}
	ws.roundTrip()
}

func writeWS(w *wsClient, s string) error {
	for len(s) > 0 {
		n := min(len(s), 4096)
		if err := w.conn.WriteMessage(2, []byte(s[:n])); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

// Issue 8: while nobody is attached, the gateway's emulator answers a
// program's cursor-position query (busybox ash asks one at every prompt),
// so a program waiting for the answer gets it; a reattaching client sees
// the result in the redrawn screen. (With --replay raw nobody answers: the
// read times out with nothing.)
func TestScreenAnswersQueriesWhileDetached(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}})
	name := g.name("web-1")
	w := g.wsQuery(t, name, "cols=80&rows=24")
	w.roundTrip()
	// After the client left: ask for the cursor position and print the
	// answer's row and column.
	w.send(`sleep 2; stty -icanon -echo; printf '\033[6n'; read -t 5 -d R ans; stty sane; echo "ANSWER=${ans#??}=$((40+2))"`)
	w.expect(`sleep 2`)
	closeWS(w)
	g.waitClients(t, name, 0)
	time.Sleep(3 * time.Second) // the query is asked with nobody attached
	back := g.wsQuery(t, name, "cols=80&rows=24")
	deadline := time.Now().Add(waitFor)
	for {
		v := emulateOurs(back.out.Bytes(), 80, 24)
		if regexp.MustCompile(`ANSWER=\d+;\d+=42`).MatchString(v.text) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer to the cursor-position query asked while nobody was attached:\n%s", v)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
