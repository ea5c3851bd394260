package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// jsUnreachable is a JavaScript expression for the visible controls
// (buttons and links) under the selector that are not wholly inside the
// viewport or not the element a tap on their centre reaches, one line
// each; empty when all are and nothing scrolls the page sideways.
func jsUnreachable(selector string) string {
	return fmt.Sprintf(`(() => {
		const out = [], W = innerWidth, H = innerHeight;
		if (document.documentElement.scrollWidth > W) out.push('the page is ' + document.documentElement.scrollWidth + ' px wide in a ' + W + ' px window');
		for (const el of document.querySelectorAll(%q)) {
			const r = el.getBoundingClientRect();
			if (r.width === 0 && r.height === 0) continue; // hidden
			const name = (el.id || el.textContent.trim()) + ' [' + Math.round(r.left) + '..' + Math.round(r.right) + ' x ' + Math.round(r.top) + '..' + Math.round(r.bottom) + ']';
			if (r.left < 0 || r.top < 0 || r.right > W + 0.5 || r.bottom > H + 0.5) { out.push(name + ' outside the ' + W + 'x' + H + ' viewport'); continue; }
			const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
			if (!at || !(at === el || el.contains(at))) out.push(name + ' covered by ' + (at ? at.tagName + '#' + at.id + '.' + at.className : 'nothing'));
		}
		if (out.length) {
			const box = (id) => { const e = document.querySelector(id); if (!e) return id + ' none'; const r = e.getBoundingClientRect(); return id + ' ' + Math.round(r.top) + '..' + Math.round(r.bottom); };
			out.push('window ' + innerWidth + 'x' + innerHeight + ', visual viewport ' + (window.visualViewport ? visualViewport.width + 'x' + visualViewport.height : 'none') +
				', --vv-height ' + (document.documentElement.style.getPropertyValue('--vv-height') || 'unset') + '; ' +
				['#terminal', '#term-wrap', '#term', '#term .xterm', '#keybar'].map(box).join(', '));
		}
		return out.join('\n'); })()`, selector)
}

// The terminal page's controls: the bar's buttons and links, the session
// tabs and "+", and the key bar's keys.
const terminalControls = `#terminal .bar button, #terminal .bar a, #tabs a, #tabs button, #keybar button`

// TestBrowserPhone (issue 39 item 3): the page on a 360×740 touch screen.
// Every control of the list and of the terminal page is on the screen and
// tappable, nothing scrolls sideways, and the key bar sends what a
// keyboard would: Ctrl then c interrupts a command, Tab completes a path,
// ↑ recalls the last command, Esc reaches the shell. In a 1000 px window
// the notice about a smaller window is whole and pushes no control off
// the screen (the bar wraps), and the desktop page has no key bar.
func TestBrowserPhone(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	gw := startGateway(t)
	name := startInstance(t, gw.label)
	b := startBrowser(t, chromium)
	base := "http://" + gw.httpAddr
	check := func(where, selector string) {
		t.Helper()
		if bad := eval[string](b, jsUnreachable(selector)); bad != "" {
			b.shot("phone-unreachable")
			t.Errorf("%s: controls out of reach:\n%s", where, bad)
		}
	}

	b.do(chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the instance in the list", fmt.Sprintf(`document.querySelector('#instances tr[data-instance=%q]') !== null`, name))
	check("the list at 360 px", `#picker .bar button, #picker .bar a, #picker input, #open-form button, #instances td:first-child a`)
	b.shot("phone-01-list")

	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("the key bar shown on a touch screen", `!document.getElementById('keybar').hidden && document.querySelectorAll('#keybar button').length === 10`)
	check("the terminal page at 360 px", terminalControls)
	// The bars settle while the page connects: the session takes the
	// window's final size, not the one the page asked for first.
	b.waitFunc("the session at this window's size", `termgateSize.note === '' && termgate.term.rows === termgateSize.want.rows`)
	if !eval[bool](b, `document.getElementById('status').getBoundingClientRect().width >= 60`) {
		t.Errorf("the status is cut to %v px at 360 px", eval[float64](b, `document.getElementById('status').getBoundingClientRect().width`))
	}
	b.shot("phone-02-terminal")
	key := func(id string) {
		t.Helper()
		b.do(chromedp.Click(fmt.Sprintf(`#keybar button[data-key=%q]`, id)))
	}

	// Ctrl (sticky), then c typed on the keyboard: the command is
	// interrupted, the prompt is back and runs the next command at once.
	// (Once the shell runs the command: a ^C that comes while ash still
	// reads the line in raw mode is a character, not a signal.)
	b.typeKeys("echo sleeping-$((6*7)); sleep 100\r")
	b.waitLine("sleeping-42")
	key("ctrl")
	b.waitFunc("Ctrl pending", `termgateKeyBar.ctrl && document.querySelector('#keybar button[data-key=ctrl]').classList.contains('on')`)
	b.shot("phone-03-ctrl")
	b.typeKeys("c")
	b.waitFunc("Ctrl released after one key", `!termgateKeyBar.ctrl`)
	b.typeKeys("echo after-$((6*7))\r")
	b.waitLine("after-42")

	// Tab completes a path.
	b.typeKeys("echo /et")
	key("tab")
	b.waitMatch(`echo /etc/\s*$`)
	b.typeKeys("\r")
	b.waitLine("/etc/")

	// ↑ recalls the last command; Enter runs it again.
	b.typeKeys("echo hist-$((6*7))\r")
	b.waitLine("hist-42")
	key("up")
	b.waitMatch(`echo hist-\$\(\(6\*7\)\)\s*$`)
	b.typeKeys("\r")
	b.waitFunc("the recalled command's second run", `(`+jsText+`.match(/^hist-42\s*$/gm) || []).length === 2`)

	// Esc reaches the shell: read gets the ESC byte.
	b.typeKeys(`read -r x; [ "$x" = "$(printf '\033')" ] && echo esc-$((6*7))` + "\r")
	key("esc")
	b.typeKeys("\r")
	b.waitLine("esc-42")

	// | ~ / are typed as they are.
	key("slash")
	b.typeKeys("bin/echo 'sym")
	key("pipe")
	key("tilde")
	b.typeKeys("' | tr '|~' 'PT'\r")
	b.waitLine("symPT")
	b.shot("phone-04-keys")

	// In the terminal's application cursor mode (DECCKM, set by vi and
	// less) an arrow sends SS3, as a keyboard's does.
	b.do(chromedp.Evaluate[chromedp.Void](`window.sent = []; termgate.conn.send = ((send) => (d) => {
		if (typeof d !== 'string') sent.push(new TextDecoder().decode(d));
		return send.call(termgate.conn, d); })(termgate.conn.send)`))
	key("left")
	b.typeKeys(`printf '\033[?1h'` + "\r")
	b.waitFunc("application cursor mode", `termgate.term.modes.applicationCursorKeysMode`)
	key("left")
	b.typeKeys(`printf '\033[?1l'` + "\r")
	b.waitFunc("normal cursor mode", `!termgate.term.modes.applicationCursorKeysMode`)
	if got := eval[string](b, `JSON.stringify(sent.filter(s => /^\x1b[\[O]D$/.test(s)))`); got != `["\u001b[D","\u001bOD"]` {
		t.Errorf("← sent %s, want ESC [ D, then in application cursor mode ESC O D", got)
	}

	// The toggle hides the key bar (the terminal takes the room) and shows
	// it again; the choice is kept.
	rows := eval[int](b, `termgateSize.want.rows`)
	b.do(chromedp.Click(chromedp.ID("keys-toggle")))
	b.waitFunc("the key bar hidden", `document.getElementById('keybar').hidden`)
	b.waitFunc("the terminal taller without the key bar", fmt.Sprintf(`termgateSize.want.rows > %d`, rows))
	b.do(chromedp.Click(chromedp.ID("keys-toggle")))
	b.waitFunc("the key bar back", `!document.getElementById('keybar').hidden`)
	b.do(chromedp.Evaluate[chromedp.Void](`localStorage.removeItem('termgate.keybar')`))

	// 400 px: the same.
	b.do(chromedp.EmulateViewport(400, 700, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.waitFunc("the page laid out at 400x700", `innerWidth === 400 && document.getElementById('terminal').getBoundingClientRect().bottom <= innerHeight`)
	check("the terminal page at 400 px", terminalControls)
	b.shot("phone-05-400")

	// A desktop window: no key bar, no toggle; then the SSH client's larger
	// session in a short window brings the notice, and every control stays.
	b.do(chromedp.EmulateViewport(1000, 300))
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	if !eval[bool](b, `document.getElementById('keybar').hidden && document.getElementById('keys-toggle').getBoundingClientRect().width === 0`) {
		t.Error("a 1000 px desktop window shows the key bar or its toggle")
	}
	st := attachSSH(t, gw, name)
	defer func() {
		_ = st.sess.Close()
		_ = st.client.Close()
	}()
	b.waitFunc("the smaller-window notice", `termgateSize.note.startsWith('window smaller than the session (80×24)')`)
	check("the terminal page at 1000 px with the notice", terminalControls)
	if !eval[bool](b, `(() => { const n = document.getElementById('size-note'); return n.scrollWidth <= n.clientWidth; })()`) {
		t.Error("the notice is cut at 1000 px")
	}
	if title := eval[string](b, `document.getElementById('size-note').title`); !strings.HasPrefix(title, "window smaller than the session") {
		t.Errorf("the notice's title = %q, want its whole text", title)
	}
	b.shot("phone-06-desktop-notice")

	// A read-only observer on a phone: its key bar sends nothing (the keys
	// take the keyboard's path, which a read-only page closes).
	const reloaded = `"msg":"reloaded API tokens"`
	before := strings.Count(gw.logs.String(), reloaded)
	watcher := "watcher-" + randomHex(16)
	f, err := os.OpenFile(filepath.Join(gw.state, "api_token"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "\n%s watcher instances=%s read-only\n", watcher, name)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); strings.Count(gw.logs.String(), reloaded) == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not reload the token file with the watcher's token")
		}
	}
	b.do(chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.do(chromedp.Navigate(base+"/t/"+name+"#token="+watcher), chromedp.WaitVisible(chromedp.ID("switch")))
	b.do(chromedp.Click(chromedp.ID("switch-accept")), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("the read-only page with its key bar", `!document.getElementById('readonly').hidden && !document.getElementById('keybar').hidden`)
	check("the read-only page at 360 px", terminalControls)
	b.do(chromedp.Evaluate[chromedp.Void](`window.sentKeys = 0; termgate.conn.send = ((send) => (d) => {
		if (typeof d !== 'string') sentKeys++;
		return send.call(termgate.conn, d); })(termgate.conn.send)`))
	for _, k := range []string{"slash", "pipe", "tilde", "esc", "tab", "ctrl", "up"} {
		key(k)
	}
	b.typeKeys("c")
	st.send(t, "echo ssh-$((6*7))\r")
	st.waitFor(t, "ssh-42")
	b.waitLine("ssh-42")
	if n := eval[int](b, `sentKeys`); n != 0 {
		t.Errorf("a read-only page's key bar sent %d chunks of input", n)
	}
	st.mu.Lock()
	out := st.out.String()
	st.mu.Unlock()
	if strings.Contains(out, "/|~") {
		t.Errorf("an observer's key bar reached the shell; the SSH writer saw:\n%q", out)
	}
	b.shot("phone-07-observer")
	b.checkConsole()
}
