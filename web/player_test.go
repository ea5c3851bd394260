package web_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/termgate/termgate/web"
)

// playerCast is a recording as the gateway writes it: output, a resize, a
// marker, input (never shown), output that looks like HTML (drawn as text,
// never parsed as markup), a gap of an hour (shortened), then a tick every
// 0.4 s for 4 s.
func playerCast() string {
	var b strings.Builder
	b.WriteString(`{"version": 2, "width": 40, "height": 10, "timestamp": 1764500000, "idle_time_limit": 1, "env": {"TERM": "xterm-256color"}}` + "\n")
	b.WriteString(`[0.05, "o", "hello "]` + "\n")
	b.WriteString(`[0.1, "r", "60x12"]` + "\n")
	b.WriteString(`[0.15, "m", "chapter one"]` + "\n")
	b.WriteString(`[0.16, "m", "termgate: at output byte 6"]` + "\n") // bookkeeping, never shown
	b.WriteString(`[0.2, "i", "hunter2"]` + "\n")
	b.WriteString(`[0.25, "o", "world\r\n<img src=x onerror=\"window.pwned=1\">\r\n"]` + "\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "[%.2f, \"o\", \"tick %d\\r\\n\"]\n", 3600+0.4*float64(i), i)
	}
	return b.String()
}

// servePlayer serves the page's assets, a signed-in whoami, and
// GET /api/recordings/web1/{s1,bad,v1} as the gateway's route does (404
// with an {"error"} body for any other).
func servePlayer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	mux.HandleFunc("GET /api/whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"tester","via":"cookie"}`))
	})
	casts := map[string]string{
		"s1":  playerCast(),
		"bad": `{"version": 2, "width": 40, "height": 10}` + "\n" + `[0.1, "o", "fine"]` + "\n" + `[0.2, "o"` + "\n",
		"v1":  `{"version": 1, "width": 40, "height": 10, "stdout": []}`,
	}
	mux.HandleFunc("GET /api/recordings/{instance}/{session}", func(w http.ResponseWriter, r *http.Request) {
		c, ok := casts[r.PathValue("session")]
		if r.PathValue("instance") != "web1" || !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no recording of that session"}`))
			return
		}
		w.Header().Set("Content-Type", "application/x-asciicast")
		_, _ = w.Write([]byte(c))
	})
	// The list's routes, as the gateway answers them (page_test.go).
	mux.HandleFunc("GET /api/instances", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(relTimes(listInstancesJSON)))
	})
	mux.HandleFunc("GET /api/recordings", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(relTimes(listRecordingsJSON)))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// TestPlayer plays a recording in Chromium: the recorded text is drawn at
// the recorded size, the marker shown, input not, markup drawn as text;
// pause stops the progress and resume continues it at 4×; a missing and a
// malformed file each give a clear error.
func TestPlayer(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	base := servePlayer(t)
	b := startBrowser(t, chromium)

	b.do(chromedp.Navigate(base+"/#play=web1/s1"), chromedp.WaitVisible(chromedp.ID("player")))
	b.waitFunc("the recorded text", `window.termgatePlayer && window.termgatePlayer.term &&
		termgatePlayer.term.buffer.active.getLine(0).translateToString(true) === 'hello world'`)
	b.waitFunc("the marker", `document.getElementById('play-marker').textContent === 'marker: chapter one'`)
	size := eval[string](b, `termgatePlayer.term.cols + 'x' + termgatePlayer.term.rows`)
	if size != "60x12" {
		t.Errorf("the terminal is %s after the recording's resize to 60x12", size)
	}
	b.waitFunc("the first tick", jsPlayerText+`.includes('tick 1\n')`)
	b.shot("player")
	if text := playerText(b); strings.Contains(text, "hunter2") {
		t.Errorf("the player shows recorded input:\n%s", text)
	} else if !strings.Contains(text, `<img src=x onerror="window.pwned=1">`) {
		t.Errorf("the recorded markup is not drawn as text:\n%s", text)
	}
	if eval[bool](b, `window.pwned === 1 || document.querySelector('#play-term img') !== null`) {
		t.Error("the recording's output became markup in the page")
	}

	// Pause: nothing more is drawn, the clock stands still.
	b.do(chromedp.Click(chromedp.ID("play-pause")))
	b.waitFunc("the Play button", `document.getElementById('play-pause').textContent === 'Play'`)
	text, pos := playerText(b), eval[float64](b, `termgatePlayer.pos`)
	time.Sleep(1500 * time.Millisecond) // more than three ticks at 1×
	if after := playerText(b); after != text {
		t.Errorf("the player drew while paused:\nbefore:\n%s\nafter:\n%s", text, after)
	}
	if after := eval[float64](b, `termgatePlayer.pos`); after != pos {
		t.Errorf("the position moved from %.2f to %.2f while paused", pos, after)
	}
	if strings.Contains(text, "tick 10") {
		t.Fatalf("the recording finished before the pause (the test needs it to run longer):\n%s", text)
	}

	// Resume at 4×: the rest plays, and the player says it finished.
	b.do(chromedp.Click(`#play-speeds button[data-speed="4"]`), chromedp.Click(chromedp.ID("play-pause")))
	b.waitFunc("the last tick", jsPlayerText+`.includes('tick 10\n')`)
	if s := eval[float64](b, `termgatePlayer.speed`); s != 4 {
		t.Errorf("speed %v after choosing 4×", s)
	}
	b.waitFunc("the end", `/finished/.test(document.getElementById('play-time').textContent)`)
	if n := strings.Count(playerText(b), "tick "); n != 10 {
		t.Errorf("%d ticks drawn, want 10 (each once):\n%s", n, playerText(b))
	}

	for _, c := range []struct{ session, want string }{
		{"none", "No recording to play for web1 session none: no recording of that session"},
		{"bad", "not a valid asciicast v2 file: line 3 is not JSON"},
		{"v1", "asciicast version 1 is not supported"},
	} {
		b.do(chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/#play=web1/"+c.session),
			chromedp.WaitVisible(chromedp.ID("play-error")))
		if got := b.textOf("play-error"); !strings.Contains(got, c.want) {
			t.Errorf("session %s: the error says %q, want it to say %q", c.session, got, c.want)
		}
	}
	b.checkConsole()
}

// playerText is the player's terminal buffer, one line per row.
func playerText(b *browser) string {
	b.t.Helper()
	return eval[string](b, jsPlayerText)
}

const jsPlayerText = `(() => { const buf = termgatePlayer.term.buffer.active, out = [];
	for (let i = 0; i < buf.length; i++) out.push(buf.getLine(i).translateToString(true));
	return out.join('\n'); })()`

// pressKey presses a key without text (End, Home, ArrowRight…) in the
// focused element.
func (b *browser) pressKey(key string, code int64) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: key, Code: key, WindowsVirtualKeyCode: code,
		}); err != nil {
			b.fail("pressing %s: %v", key, err)
		}
	}
}

// TestPlayerSeek (issue 22 item 7): the player's seek bar redraws the
// screen at the position chosen, from the start (each tick drawn once,
// the recording's first size back at 0), by dragging (an input event) and
// from the keyboard (End, Home, the arrows by 5 s), paused or playing.
func TestPlayerSeek(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	base := servePlayer(t)
	b := startBrowser(t, chromium)

	b.do(chromedp.Navigate(base+"/#play=web1/s1"), chromedp.WaitVisible(chromedp.ID("player")))
	b.waitFunc("the player", `window.termgatePlayer && window.termgatePlayer.term !== undefined`)
	b.do(chromedp.Click(chromedp.ID("play-pause")))
	b.waitFunc("the pause", `termgatePlayer.paused`)
	if max := eval[float64](b, `Number(document.getElementById('play-seek').max)`); max < 4.8 || max > 4.9 {
		t.Errorf("the seek bar ends at %v s, want the shortened recording's 4.85 s", max)
	}
	ticks := func() int { return strings.Count(playerText(b), "tick ") }
	seeked := func(what string, to float64) {
		t.Helper()
		b.waitFunc(what, fmt.Sprintf(`termgatePlayer.seeked !== undefined && Math.abs(termgatePlayer.seeked - %v) < 0.01`, to))
	}

	// Keyboard: End draws the whole recording, Home the empty start.
	b.do(chromedp.Focus("#play-seek"))
	b.pressKey("End", 35)
	seeked("the seek to the end", 4.85)
	if n := ticks(); n != 10 {
		t.Errorf("at the end %d ticks are drawn, want 10 (each once):\n%s", n, playerText(b))
	}
	b.pressKey("Home", 36)
	seeked("the seek to the start", 0)
	if text, size := strings.TrimSpace(playerText(b)), eval[string](b, `termgatePlayer.term.cols + 'x' + termgatePlayer.term.rows`); text != "" || size != "40x10" {
		t.Errorf("at 0 s the screen is %q at %s, want empty at the recording's first size 40x10", text, size)
	}
	if v := eval[float64](b, `Number(document.getElementById('play-seek').value)`); v != 0 {
		t.Errorf("the seek bar shows %v at the start", v)
	}

	// Dragging to 2 s: ticks 1 and 2 (at 1.25 s and 1.65 s), not 3.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('play-seek');
		s.value = '2'; s.dispatchEvent(new Event('input')); })()`))
	seeked("the seek to 2 s", 2)
	if text := playerText(b); !strings.Contains(text, "hello world") || !strings.Contains(text, "tick 2\n") || strings.Contains(text, "tick 3") {
		t.Errorf("at 2 s the screen is:\n%s\nwant hello world and ticks 1 and 2", text)
	}
	if size := eval[string](b, `termgatePlayer.term.cols + 'x' + termgatePlayer.term.rows`); size != "60x12" {
		t.Errorf("at 2 s the terminal is %s, want 60x12 (the recording's resize at 0.1 s)", size)
	}
	b.shot("player-seek")
	// An arrow moves 5 s on (to the end), and playing from a seek goes on.
	b.pressKey("ArrowRight", 39)
	seeked("the seek by 5 s", 4.85)
	b.pressKey("Home", 36)
	seeked("the seek back to the start", 0)
	b.do(chromedp.Click(chromedp.ID("play-pause")), chromedp.Evaluate[chromedp.Void](`termgatePlayer.setSpeed(4)`))
	b.waitFunc("the last tick after playing from the start", jsPlayerText+`.includes('tick 10\n')`)
	if n := ticks(); n != 10 {
		t.Errorf("after playing from a seek %d ticks are drawn, want 10", n)
	}
	b.checkConsole()
}
