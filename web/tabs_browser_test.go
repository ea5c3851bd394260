package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSessionTabs (issue 36 item 3) drives the page's tabs against
// the real gateway and a real container:
//   - a bookmarked /t/INSTANCE+build opens the named session build, its
//     tab marked, the default session's tab beside it;
//   - "+" refuses a name the gateway would refuse, then opens the session
//     logs at its own address, with its own shell (another $$);
//   - switching tabs shows each session's own screen;
//   - Reset on a tab resets only that session: the other's shell keeps
//     its pid; Keep and Pin size act on the tab's session only;
//   - the instance list shows the named sessions under their instance
//     (no default session: "no session"), each linked to its tab;
//   - at a phone's width the tabs and "+" stay reachable.
func TestBrowserSessionTabs(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	gw := startGateway(t)
	name := startInstance(t, gw.label)
	b := startBrowser(t, chromium)
	base := "http://" + gw.httpAddr

	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))

	// ---- A bookmark: /t/NAME+build, straight to that session.
	b.do(chromedp.Navigate(base+"/t/"+name+"+build"), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	if got := eval[string](b, `document.title`); got != name+"+build · termgate" {
		t.Errorf("the title is %q, want %q", got, name+"+build · termgate")
	}
	b.waitFunc("the build tab, current, after the default one", `(() => {
		const tabs = [...document.querySelectorAll('#tab-list a.tab')];
		const cur = document.querySelector('#tab-list a.tab.current');
		return tabs.length === 2 && tabs[0].dataset.name === '' && cur && cur.dataset.name === 'build' &&
			!cur.classList.contains('pending'); })()`)
	if href := eval[string](b, `document.querySelector('#tab-list a.tab.default').getAttribute('href')`); href != "/t/"+name {
		t.Errorf("the default session's tab links %q, want /t/%s", href, name)
	}
	b.typeKeys("echo pid=$$\r")
	buildPID := b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]

	// ---- "+": a name the gateway refuses is refused here, nothing opened.
	b.do(chromedp.Click(chromedp.ID("new-session")), chromedp.WaitVisible(chromedp.ID("new-session-dialog")))
	b.do(chromedp.SendKeys(chromedp.ID("new-session-name"), "Logs"), chromedp.Click(chromedp.ID("new-session-go")))
	b.waitFunc("the refusal of Logs", `!document.getElementById('new-session-error').hidden &&
		document.getElementById('new-session-error').textContent.includes('not a session name') &&
		document.getElementById('new-session-dialog').open`)
	b.shot("tabs-new-refused")
	if p := eval[string](b, `location.pathname`); p != "/t/"+name+"+build" {
		t.Errorf("after a refused name the page is at %s", p)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('new-session-name').value = ''`),
		chromedp.SendKeys(chromedp.ID("new-session-name"), "logs"))
	b.waitFunc("the name accepted", `document.getElementById('new-session-error').hidden`)
	b.do(chromedp.Click(chromedp.ID("new-session-go")))
	b.waitSessionPage(name, "logs")
	if got := eval[string](b, `termgate.conn.sessName`); got != "logs" {
		t.Errorf("the page attached the session %q, want logs", got)
	}
	b.typeKeys("echo pid=$$\r")
	logsPID := b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]
	if logsPID == buildPID {
		t.Fatalf("the sessions build and logs share one shell (pid %s)", buildPID)
	}
	b.waitFunc("three tabs: default, build, logs (current)", `(() => {
		const tabs = [...document.querySelectorAll('#tab-list a.tab')].map(a => a.dataset.name + (a.classList.contains('current') ? '*' : ''));
		return tabs.join(',') === ',build,logs*'; })()`)
	b.shot("tabs-logs")

	// ---- Switching tabs: each session's own screen.
	screen := func(session, pid, other string) {
		t.Helper()
		b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tab-list a.tab[data-name=%q]`, session))))
		b.waitSessionPage(name, session)
		b.waitLine("pid=" + pid)
		if text := b.text(); strings.Contains(text, "pid="+other) {
			t.Errorf("the %s tab shows the other session's output (pid=%s):\n%s", session, other, text)
		}
	}
	screen("build", buildPID, logsPID)
	screen("logs", logsPID, buildPID)

	// ---- Reset on the logs tab: only logs gets a fresh shell.
	b.do(chromedp.Click(chromedp.ID("reset")))
	b.waitFunc("the reset notice", `document.getElementById('status').textContent.includes('session reset: fresh shell')`)
	b.typeKeys("echo after=$$\r")
	if fresh := b.waitMatch(`(?m)^after=(\d+)\s*$`)[1]; fresh == logsPID {
		t.Errorf("after Reset on the logs tab its shell's pid is still %s", logsPID)
	}
	b.do(chromedp.Click(chromedp.CSS(`#tab-list a.tab[data-name="build"]`)))
	b.waitSessionPage(name, "build")
	b.typeKeys("echo still=$$\r")
	if still := b.waitMatch(`(?m)^still=(\d+)\s*$`)[1]; still != buildPID {
		t.Errorf("Reset on the logs tab reset build too: its pid %s became %s", buildPID, still)
	}

	// ---- Keep and Pin size on the build tab: build's, not logs'.
	b.do(chromedp.Click(chromedp.ID("keep")))
	b.waitFunc("the keep's outcome", `(window.termgateFiles || {}).text && termgateFiles.text.startsWith('kept until')`)
	b.do(chromedp.Click(chromedp.ID("pin-size")))
	b.waitFunc("the pin", `document.getElementById('pin-size').textContent === 'Unpin size'`)
	state := eval[string](b, fmt.Sprintf(`fetch('/api/sessions').then(r => r.json()).then(l => l.filter(s => s.instance === %q)
		.map(s => s.name + ':' + (s.keep_until ? 'kept' : '-') + ':' + (s.size_pinned ? 'pinned' : '-')).sort().join(' '))`, name))
	if state != "build:kept:pinned logs:-:-" {
		t.Errorf("after Keep and Pin size on the build tab the sessions are %q, want build:kept:pinned logs:-:-", state)
	}

	// ---- At a phone's width: the tabs scroll, "+" stays on screen.
	b.do(chromedp.EmulateViewport(360, 640))
	b.waitFunc("+ on screen at 360 px", `(() => { const r = document.getElementById('new-session').getBoundingClientRect();
		return r.width > 0 && r.left >= 0 && r.right <= innerWidth; })()`)
	b.shot("tabs-narrow")
	b.do(chromedp.EmulateViewport(1100, 700))

	// ---- The list: both named sessions under their instance, linked.
	b.do(chromedp.Click(chromedp.ID("back")), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the named sessions in the list", fmt.Sprintf(`(() => {
		const inst = document.querySelector('#instances tr[data-instance=%[1]q]');
		const rows = [...document.querySelectorAll('#instances tr.session-row[data-of=%[1]q]')];
		return inst && inst.cells[1].textContent === 'no session' &&
			rows.map(r => r.dataset.name).join(',') === 'build,logs' &&
			rows.every(r => r.cells[0].textContent === '+' + r.dataset.name && /^(idle|attached)/.test(r.cells[1].textContent)) &&
			inst.nextElementSibling === rows[0]; })()`, name))
	href := eval[string](b, fmt.Sprintf(`document.querySelector('#instances tr.session-row[data-of=%q][data-name="logs"] a').getAttribute('href')`, name))
	if href != "/t/"+name+"+logs" {
		t.Errorf("the logs row links %q, want /t/%s+logs", href, name)
	}
	b.shot("tabs-list")
	b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#instances tr.session-row[data-of=%q][data-name="logs"] a`, name))))
	b.waitSessionPage(name, "logs")
	b.checkConsole()
}

// waitSessionPage waits, for up to 15 s, until the page that a click made
// the browser load is the terminal of instance's session, connected. It
// asks again and again rather than polling in the page (waitFunc): a poll
// running in the page that the click replaces never answers.
func (b *browser) waitSessionPage(instance, session string) {
	b.t.Helper()
	expr := fmt.Sprintf(`location.pathname === %q && typeof termgate === 'object' && termgate.conn &&
		termgate.conn.sessName === %q && document.querySelector('#status.connected') !== null`, "/t/"+instance+"+"+session, session)
	var last string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := b.step()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		last = fmt.Sprint(err)
	}
	b.fail("the page never showed the session %s+%s connected (last: %s)", instance, session, last)
}
