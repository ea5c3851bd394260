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

// TestBrowserPageStates (issue 22 item 7) drives the page against the real
// gateway and a real container:
//   - the list shows the container's image, status and termgate.* label
//     (docs/page.png is this screenshot);
//   - Reset, once confirmed, shows "resetting…" with the button disabled
//     and the old screen dimmed until the fresh shell is attached;
//   - after the gateway crashed (SIGKILL: no close frame, no 1012 hint)
//     the page offers "Reconnect now", retries at once on pageshow, and
//     tries again within 2 s of the gateway listening again;
//   - the recordings list names the instance's recordings, one per
//     session, and opens them in the player with its seek bar;
//   - a read-only token's row says read-only and opens the read-only page.
func TestBrowserPageStates(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	gw := startGateway(t)
	name := startInstance(t, gw.label, "--label", "termgate.owner=page-test")
	px := startProxy(t, gw.httpAddr)
	b := startBrowser(t, chromium)
	base := "http://" + px.addr()

	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the instance with its details", fmt.Sprintf(`(() => { const r = document.querySelector('#instances tr[data-instance=%q]');
		return r && r.cells[5].textContent === 'termgate-test:busybox' && r.cells[6].textContent.startsWith('Up') &&
			r.cells[7].textContent === 'termgate.owner=page-test' && r.cells[8].textContent === ''; })()`, name))
	if labels := b.textAt(fmt.Sprintf(`#instances tr[data-instance=%q] td.labels`, name)); strings.Contains(labels, "tgweb") {
		t.Errorf("the list shows the gateway's selection label, not only termgate.* ones: %q", labels)
	}
	b.shot("page-list")

	// ---- Reset: the wait for the fresh shell is visible.
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.typeKeys("echo pid=$$\r")
	pid := b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]
	// Record every state the bar goes through: the reset may take a few
	// hundred milliseconds, too short to poll reliably.
	b.do(chromedp.Evaluate[chromedp.Void](`window.resetSeen = [];
		new MutationObserver(() => resetSeen.push({status: document.getElementById('status').textContent,
			disabled: document.getElementById('reset').disabled,
			dimmed: document.getElementById('term-wrap').classList.contains('resetting')}))
			.observe(document.getElementById('terminal'), {subtree: true, attributes: true, childList: true, characterData: true})`))
	b.do(chromedp.Click(chromedp.ID("reset")))
	b.waitFunc("the reset notice", `document.getElementById('status').textContent.includes('session reset: fresh shell')`)
	seen := eval[string](b, `JSON.stringify(resetSeen)`)
	if !eval[bool](b, `resetSeen.some(s => s.status.startsWith('resetting…') && s.disabled && s.dimmed)`) {
		t.Errorf("after the confirmed reset the page never said resetting… with Reset disabled and the screen dimmed; states: %s", seen)
	}
	if eval[bool](b, `(() => { const i = resetSeen.findIndex(s => s.status.startsWith('resetting…'));
		return i >= 0 && resetSeen.slice(i).some(s => s.status === 'connected' && s.dimmed); })()`) {
		t.Errorf("the page said connected while still waiting for the fresh shell; states: %s", seen)
	}
	if !eval[bool](b, `!document.getElementById('reset').disabled && !document.getElementById('term-wrap').classList.contains('resetting')`) {
		t.Error("after the fresh shell attached, Reset stays disabled or the screen dimmed")
	}
	b.typeKeys("echo pid=$$\r")
	b.waitFunc("the fresh shell's pid", `((`+jsText+`).match(/^pid=\d+\s*$/gm) || []).length >= 1`)
	if newPID := b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]; newPID == pid {
		t.Errorf("after Reset the shell's pid is still %s", pid)
	}
	b.shot("page-reset")

	// ---- Reconnect: a crash, a few failed retries, the gateway back.
	gw.proc.Kill()
	gw.proc = nil
	b.waitFunc("the reconnecting status", `document.querySelector('#status.reconnecting') !== null`)
	b.waitFunc("the Reconnect now button", `!document.getElementById('reconnect-now').hidden`)
	b.shot("page-reconnecting")
	tries := eval[int](b, `termgate.conn.attempts`)
	b.do(chromedp.Click(chromedp.ID("reconnect-now")))
	b.waitFunc("a retry from Reconnect now", fmt.Sprintf(`termgate.conn.attempts > %d`, tries))
	b.waitFunc("the next retry's wait", `!document.getElementById('reconnect-now').hidden`)
	tries = eval[int](b, `termgate.conn.attempts`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}))`))
	b.waitFunc("a retry on pageshow", fmt.Sprintf(`termgate.conn.attempts > %d`, tries))
	// Down long enough that an uncapped backoff would wait 4–8 s.
	time.Sleep(7 * time.Second)
	gw.start()
	// The page's clock when the gateway is back for it: read before the
	// proxy points at it, so that a try in between counts as after (read
	// after, a try that came sooner found no try at or after it).
	up := eval[float64](b, `Date.now()`)
	px.retarget(gw.httpAddr)
	b.waitConnected()
	back := eval[float64](b, `Date.now()`)
	first := eval[float64](b, fmt.Sprintf(`termgate.conn.tries.find(t => t >= %v) || 0`, up))
	t.Logf("gateway listening again: the page tried %.0f ms later and was attached after %.0f ms (%d tries in all)",
		first-up, back-up, eval[int](b, `termgate.conn.attempts`))
	if first == 0 || first-up > 2000+500 {
		t.Errorf("the page's first try came %.0f ms after the gateway was back, want at most 2 s (+0.5 s margin)", first-up)
	}
	if !eval[bool](b, `document.getElementById('reconnect-now').hidden`) {
		t.Error("Reconnect now is still shown while connected")
	}

	// ---- Recordings: one per session (before and after the reset).
	b.do(chromedp.Click(chromedp.ID("back")), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the instance's recordings", fmt.Sprintf(`document.querySelectorAll('#recordings-table tr[data-instance=%q]').length >= 2`, name))
	b.shot("page-recordings")
	b.do(chromedp.Click(fmt.Sprintf(`#recordings-table tr[data-instance=%q] a.play`, name)), chromedp.WaitVisible(chromedp.ID("player")))
	b.waitFunc("the player with its seek bar", `window.termgatePlayer && termgatePlayer.term !== undefined && !document.getElementById('play-seek').hidden`)

	// ---- A read-only token: its row says so and opens read-only.
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
	b.do(chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/#token="+watcher), chromedp.WaitVisible(chromedp.ID("switch")))
	b.do(chromedp.Click(chromedp.ID("switch-accept")), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the read-only row", fmt.Sprintf(`(() => { const r = document.querySelector('#instances tr[data-instance=%q]');
		return r && r.classList.contains('observer') && r.cells[8].textContent === 'read-only'; })()`, name))
	b.shot("page-list-readonly")
	b.do(chromedp.Click(fmt.Sprintf(`#instances tr[data-instance=%q] a`, name)), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("the read-only page", `!document.getElementById('readonly').hidden && document.getElementById('reset').hidden && document.getElementById('paste').hidden`)
	b.checkConsole()
}
