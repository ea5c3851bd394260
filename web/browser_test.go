package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/web"
)

// The tests that start a gateway run in parallel (t.Parallel; -parallel
// bounds them, GOMAXPROCS by default: on two cores, two Chromiums at a
// time). Each has its own gateway, state directory, ports, label,
// containers and browser profile; what they share is built once, in
// binDir: the gateway and the holder.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "termgate-web-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "web:", err)
		os.Exit(1)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// binDir holds the binaries the tests share (TestMain removes it).
var binDir string

// onceBuild builds a binary once for the whole package: the first test to
// need it builds it, the others wait for that and get its result.
type onceBuild struct {
	once sync.Once
	path string
	err  error
}

func (o *onceBuild) get(t *testing.T, build func(ctx context.Context, out string) error, name string) string {
	t.Helper()
	o.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		o.path = filepath.Join(binDir, name)
		o.err = build(ctx, o.path)
	})
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.path
}

var gatewayBuild, holderBuild onceBuild

// gatewayBin is cmd/termgate, built once.
func gatewayBin(t *testing.T) string {
	t.Helper()
	return gatewayBuild.get(t, gatewayproc.Build, "termgate")
}

// TestBrowser drives the page in headless Chromium against the real gateway
// binary on loopback and a real container: sign-in with /?token=, the
// instance list before any session exists, opening an instance, typing, a
// network drop with output missed meanwhile, a reload, a window resize,
// typing seen by an SSH client attached to the same session, a gateway
// restart that keeps the sign-in, and Reset. Screenshots go to
// $TERMGATE_ARTIFACTS/browser when that is set (a temporary directory
// otherwise).
func TestBrowser(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	start := time.Now()

	gw := startGateway(t)
	name := startInstance(t, gw.label)
	px := startProxy(t, gw.httpAddr)
	b := startBrowser(t, chromium)
	base := "http://" + px.addr()

	// Without a cookie, a shared /t/NAME link shows the sign-in form, and a
	// wrong token is refused there with the API's message.
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("signin")))
	b.do(chromedp.SendKeys(chromedp.ID("signin-token"), "not-the-token\r"))
	b.do(chromedp.WaitVisible(chromedp.ID("signin-error")))
	if msg := b.textOf("signin-error"); !strings.Contains(msg, "invalid token") {
		t.Errorf("sign-in error = %q, want the API's \"invalid token\"", msg)
	}
	b.shot("01-signin")

	// A sign-in link with the token in the query (/?token=…) signs in and
	// leaves the address bar without the token; so does the address the
	// gateway printed at its first start (/#token=…), after a sign-out.
	u, _ := url.Parse(gw.signIn)
	tok := u.Query().Get("token")
	if tok == "" {
		tok = strings.TrimPrefix(u.Fragment, "token=")
	}
	for _, link := range []string{"/?token=" + url.QueryEscape(tok), gw.signIn} {
		b.do(chromedp.Navigate(base+link), chromedp.WaitVisible(chromedp.ID("picker")))
		if loc := eval[string](b, `location.href`); loc != base+"/" {
			t.Errorf("address after signing in with %s = %q, want %q (token removed)", strings.Replace(link, tok, "TOKEN", 1), loc, base+"/")
		}
		b.checkCookie()
		if link != gw.signIn {
			b.do(chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
		}
	}

	// The list shows the instance before anything attached to it: the
	// running containers the token may reach, not only their sessions.
	b.waitFunc("the instance in the list", fmt.Sprintf(
		`[...document.querySelectorAll('#instances tbody tr')].some(r => r.cells[0].textContent === %q && r.cells[1].textContent === 'no session')`, name))
	if href := eval[string](b, fmt.Sprintf(`document.querySelector('#instances tr[data-instance=%q] a').getAttribute('href')`, name)); href != "/t/"+name {
		t.Errorf("the instance's link = %q, want /t/%s", href, name)
	}
	b.shot("02-instances")

	// Open the instance from the picker's field: /t/NAME, titled with it.
	b.do(chromedp.SendKeys(chromedp.ID("open-name"), name+"\r"), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	if p := eval[string](b, `location.pathname`); p != "/t/"+name {
		t.Errorf("terminal address = %q, want /t/%s", p, name)
	}
	if title := eval[string](b, `document.title`); !strings.Contains(title, name) {
		t.Errorf("tab title %q does not name the instance %q", title, name)
	}
	b.typeKeys("echo pid=$$; ls /\r")
	pid := b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]

	// An SSH client joins the same session: it sees what the browser types,
	// and the browser sees what it types.
	st := attachSSH(t, gw, name)
	st.waitFor(t, "pid="+pid)
	b.typeKeys("echo browser-typed-$((6*7))\r")
	st.waitFor(t, "browser-typed-42")
	st.send(t, "echo ssh-typed-$((6*7))\n")
	b.waitLine("ssh-typed-42")

	// Copy and paste: Ctrl+Shift+C puts the selected line on the clipboard,
	// the Paste button types the clipboard into the shell.
	b.grantClipboard(base)
	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const buf = termgate.term.buffer.active;
		for (let i = 0; i < buf.length; i++)
			if (buf.getLine(i).translateToString(true) === 'browser-typed-42') termgate.term.selectLines(i, i); })()`))
	b.ctrlShift("KeyC")
	b.waitFunc("the copied line on the clipboard", `navigator.clipboard.readText().then(t => t.trim() === 'browser-typed-42', () => false)`)
	b.do(chromedp.Evaluate[chromedp.Void](`navigator.clipboard.writeText('echo pasted-$((6*7))\n')`, chromedp.EvalAwaitPromise),
		chromedp.Click(chromedp.ID("paste")))
	b.waitLine("pasted-42")
	st.waitFor(t, "pasted-42")

	// The window shrinks: the page fits the terminal and tells the shell.
	wide := eval[int](b, `termgate.term.cols`)
	b.do(chromedp.EmulateViewport(800, 560))
	b.waitFunc("the terminal to refit", fmt.Sprintf(`termgate.term.cols < %d`, wide))
	size := fmt.Sprintf("%d %d", eval[int](b, `termgate.term.rows`), eval[int](b, `termgate.term.cols`))
	// The gateway applies resizes asynchronously: the shell waits for it.
	b.typeKeys(`for i in $(seq 50); do [ "$(stty size)" = "` + size + `" ] && break; sleep 0.1; done; stty size` + "\r")
	b.waitMatch(`(?m)^\d+ \d+\s*$`)
	b.waitLine(size)
	b.shot("03-shell")

	// A network drop: the page says it is reconnecting, output it misses
	// meanwhile arrives once it is back, and nothing is doubled.
	px.cut()
	b.waitFunc("the reconnecting status", `document.querySelector('#status.reconnecting') !== null`)
	b.shot("04-reconnecting")
	st.send(t, "echo while-away-$((6*7))\n")
	st.waitFor(t, "while-away-42")
	time.Sleep(300 * time.Millisecond) // let a retry or two fail
	px.restore()
	b.waitConnected()
	b.waitLine("while-away-42")
	if !eval[bool](b, `termgate.conn.lastAttach.resumed`) {
		t.Errorf("after the drop the page did not resume (lastAttach %s)", eval[string](b, `JSON.stringify(termgate.conn.lastAttach)`))
	}
	b.expectOnce("browser-typed-42", "while-away-42")

	// Reload: the same shell, its earlier output replayed once.
	b.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitLine("while-away-42")
	b.expectOnce("browser-typed-42", "ssh-typed-42", "while-away-42")
	b.typeKeys("echo pid=$$\r")
	b.waitFunc("a second pid line", `((`+jsText+`).match(/^pid=\d+\s*$/gm) || []).length >= 2`)
	for _, m := range regexp.MustCompile(`(?m)^pid=(\d+)\s*$`).FindAllStringSubmatch(b.text(), -1) {
		if m[1] != pid {
			t.Errorf("after a reload the shell's pid is %s, want %s (the same shell)", m[1], pid)
		}
	}
	b.shot("05-reloaded")

	// Issue 8: reloaded while busybox top runs, the page shows top whole
	// (the screen replay redraws it), not only what top changed last.
	b.typeKeys("top -d 1\r")
	b.waitMatch(`PID +PPID +USER`)
	b.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("top whole after the reload", `(() => { const buf = termgate.term.buffer.active, rows = [];
		for (let i = 0; i < termgate.term.rows; i++) rows.push(buf.getLine(buf.viewportY + i).translateToString(true));
		return rows[0].startsWith('Mem:') && rows[1].startsWith('CPU:') && rows.some(r => /PID +PPID +USER/.test(r)) && rows.some(r => /top -d 1/.test(r)); })()`)
	b.shot("05b-top-reattached")
	b.typeKeys("q")

	// A gateway restart ends the session but not the sign-in (the cookie is
	// signed with the key in the state directory): the page tells why it
	// retries, then reconnects by itself, never showing the sign-in form,
	// and lands in a fresh shell.
	b.do(chromedp.Evaluate[chromedp.Void](`window.signInShown = false;
		new MutationObserver(() => { if (!document.getElementById('signin').hidden) window.signInShown = true; })
			.observe(document.getElementById('signin'), { attributes: true })`))
	gw.stop()
	b.waitFunc("the reconnecting status", `document.querySelector('#status.reconnecting') !== null`)
	if s := b.textOf("status"); !strings.Contains(s, "shutting down") {
		t.Errorf("status during the restart = %q, want the gateway's reason (shutting down)", s)
	}
	b.shot("06-restarting")
	gw.start()
	px.retarget(gw.httpAddr)
	// Skip the backoff's wait, as when the network comes back (the drop
	// above waited it out).
	b.do(chromedp.Evaluate[chromedp.Void](`window.dispatchEvent(new Event('online'))`))
	b.waitConnected()
	if shown := eval[string](b, `String(window.signInShown)`); shown != "false" {
		t.Errorf("after the restart the sign-in form was shown or the page reloaded (signInShown = %s)", shown)
	}
	if p := eval[string](b, `location.pathname`); p != "/t/"+name {
		t.Errorf("address after the restart = %q, want /t/%s", p, name)
	}
	if !eval[bool](b, `termgate.conn.lastAttach.new && !termgate.conn.lastAttach.resumed`) {
		t.Errorf("after the restart the page did not start a new session (lastAttach %s)", eval[string](b, `JSON.stringify(termgate.conn.lastAttach)`))
	}
	b.shot("07-restarted")
	st = attachSSH(t, gw, name)
	b.typeKeys("echo pid=$$\r")
	pid = b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]
	st.waitFor(t, "pid="+pid)

	// Reset (confirmed in the dialog): a fresh shell, for both clients.
	b.do(chromedp.Click(chromedp.ID("reset")))
	// The page says so in its status bar (in the terminal, the fresh
	// shell's screen replay may redraw over a notice).
	b.waitFunc("the reset notice", `document.getElementById('status').textContent.includes('session reset: fresh shell')`)
	st.waitFor(t, "[termgate]")
	b.waitConnected()
	b.typeKeys("echo pid=$$\r")
	newPID := b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]
	if newPID == pid {
		t.Errorf("after Reset the shell's pid is still %s", pid)
	}
	if n := b.dialogs(); n != 1 {
		t.Errorf("%d confirmation dialogs, want 1", n)
	}
	b.shot("08-reset")

	// Back to the list: the session, with the SSH client still attached
	// (named in the list: who is attached, and how);
	// its link opens the terminal again.
	b.do(chromedp.Click(chromedp.ID("back")), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the session in the list", fmt.Sprintf(
		`[...document.querySelectorAll('#instances tbody tr')].some(r => r.cells[0].textContent === %q && /^attached: [^,]+ \(ssh\)$/.test(r.cells[1].textContent))`, name))
	if title := eval[string](b, `document.title`); title != "termgate" {
		t.Errorf("the list's title = %q", title)
	}
	b.shot("09-instances")

	// The session is recorded (--record-dir): its list row links the
	// recording, which the page's player plays from the gateway's
	// GET /api/recordings route: the fresh shell's output, at the size it had.
	href := eval[string](b, fmt.Sprintf(`(document.querySelector('#instances tr[data-instance=%q] a.recording') || {}).href || ''`, name))
	if !strings.Contains(href, "#play="+name+"/") {
		b.fail("the list links no recording for %s (href %q)", name, href)
	}
	b.do(chromedp.Navigate(href), chromedp.WaitVisible(chromedp.ID("player")))
	b.waitFunc("the recording's output in the player", `window.termgatePlayer && window.termgatePlayer.term && (`+jsText+`).includes('pid=`+newPID+`')`)
	b.shot("09b-recording")
	b.do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("picker")))
	b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#instances tr[data-instance=%q] a`, name))), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	if p := eval[string](b, `location.pathname`); p != "/t/"+name {
		t.Errorf("the list's link opened %q, want /t/%s", p, name)
	}
	b.loginCSRF(gw, base, name)
	b.observer(gw, base, name)
	b.checkConsole()
	t.Logf("browser test took %v; screenshots in %s", time.Since(start).Round(time.Millisecond), b.shots)
}

// loginCSRF checks issue 9 item 7: the page always shows who it is signed
// in as, and a sign-in link with someone else's token (here mallory's,
// added to the token file) never replaces the login without asking. Staying
// keeps the login, switching takes the link's token, and the gateway's own
// link switches back. The browser is signed in with the gateway's token
// when it starts.
func (b *browser) loginCSRF(gw *gateway, base, instance string) {
	t := b.t
	t.Helper()
	b.waitFunc("the identity", `(window.termgateIdentity || {}).name !== undefined`)
	me := eval[string](b, `termgateIdentity.name`)
	for _, view := range []string{"#picker", "#terminal"} {
		if shown := b.textAt(view + " .identity-name"); me == "" || shown != me {
			t.Errorf("%s says signed in as %q, want the token's name %q", view, shown, me)
		}
	}
	whoami := `fetch('/api/whoami', {cache: 'no-store'}).then(r => r.json()).then(j => j.name)`

	mallory := "mallory-" + randomHex(16)
	reloads := strings.Count(gw.logs.String(), "reloaded API tokens")
	f, err := os.OpenFile(filepath.Join(gw.state, "api_token"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "\n%s mallory instances=nothing-*\n", mallory)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the gateway's log to say it reloaded the file: asking with
	// mallory's token before then counts as failures and locks the address
	// out (ten within the ~0.7 s the reload took on the loaded machine).
	for deadline := time.Now().Add(15 * time.Second); strings.Count(gw.logs.String(), "reloaded API tokens") == reloads; {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not reload its token file within 15 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.waitFunc("the gateway to load mallory's token", fmt.Sprintf(
		`fetch('/api/whoami', {cache: 'no-store', headers: {Authorization: 'Bearer %s'}}).then(r => r.ok)`, mallory))

	// The attack: a link to the instance with mallory's token. The page asks,
	// naming both, and the cookie is still the user's while it does.
	b.do(chromedp.Navigate(base+"/t/"+instance+"#token="+mallory), chromedp.WaitVisible(chromedp.ID("switch")))
	if got := b.textOf("switch-new"); got != "mallory" {
		t.Errorf("the question names %q, want mallory", got)
	}
	if q := b.textOf("switch-question"); !strings.Contains(q, me) || !strings.Contains(q, "nothing-*") {
		t.Errorf("the question %q does not name the current identity %q and mallory's limits", q, me)
	}
	if loc := eval[string](b, `location.href`); strings.Contains(loc, mallory) {
		t.Errorf("the address still carries the token: %q", loc)
	}
	b.shot("10-switch-identity")
	if got := eval[string](b, whoami); got != me {
		t.Errorf("while asking, the browser is signed in as %q, want %q (the cookie was replaced)", got, me)
	}
	// Stay: the terminal opens as the user, who the bar names.
	b.do(chromedp.Click(chromedp.ID("switch-keep")), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	if got := eval[string](b, whoami); got != me {
		t.Errorf("after staying, the browser is signed in as %q, want %q", got, me)
	}
	if shown := b.textAt("#terminal .identity-name"); shown != me {
		t.Errorf("the terminal's bar says signed in as %q, want %q", shown, me)
	}

	// Switch, when the user does want to: the page then says so.
	b.do(chromedp.Navigate(base+"/#token="+mallory), chromedp.WaitVisible(chromedp.ID("switch")))
	b.do(chromedp.Click(chromedp.ID("switch-accept")), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the list to name mallory", `document.querySelector('#picker .identity-name').textContent === 'mallory'`)
	if got := eval[string](b, whoami); got != "mallory" {
		t.Errorf("after switching, the browser is signed in as %q, want mallory", got)
	}
	// And back with the gateway's own link, which asks the same way. (From
	// a blank page: at / the link would only change the fragment.)
	b.do(chromedp.Navigate("about:blank"), chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("switch")))
	if got := b.textOf("switch-new"); got != me {
		t.Errorf("the question names %q, want %q", got, me)
	}
	b.do(chromedp.Click(chromedp.ID("switch-accept")), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the list to name the user again", fmt.Sprintf(`document.querySelector('#picker .identity-name').textContent === %q`, me))
	// The user's own link while signed in with it changes nothing and asks
	// nothing.
	b.do(chromedp.Navigate("about:blank"), chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the identity", `(window.termgateIdentity || {}).name !== undefined`)
	if shown := eval[bool](b, `!document.getElementById('switch').hidden`); shown {
		t.Error("the user's own sign-in link asked to switch identity")
	}
}

// observer checks issue 12 in the page: signed in with a read-only token
// (limited to the instance), the page shows "read-only", has no Reset
// button and lists who is attached; keys typed are not sent, input forced
// onto the socket gets the gateway's notice, and neither reaches the shell;
// the page's size (another one, and a resize) never changes the shell's,
// which an SSH writer's stty size shows; the writer's output shows live.
func (b *browser) observer(gw *gateway, base, instance string) {
	t := b.t
	t.Helper()
	w := attachSSH(t, gw, instance)
	// Its 24x80 reaches the shell asynchronously (the page was the
	// latest to size it).
	for i := 0; ; i++ {
		w.send(t, fmt.Sprintf("echo bs%d=$(stty size).\r", i))
		w.waitFor(t, fmt.Sprintf("\nbs%d=", i))
		w.mu.Lock()
		ok := strings.Contains(w.out.String(), fmt.Sprintf("bs%d=24 80.", i))
		w.mu.Unlock()
		if ok {
			break
		}
		if i == 100 {
			t.Fatal("the SSH writer's 24x80 never reached the shell")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Wait for the reload in the log: polling with the new token would
	// count as failed authentications until it is loaded.
	const reloaded = `"msg":"reloaded API tokens"`
	before := strings.Count(gw.logs.String(), reloaded)
	watcher := "watcher-" + randomHex(16)
	f, err := os.OpenFile(filepath.Join(gw.state, "api_token"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "\n%s watcher instances=%s read-only\n", watcher, instance)
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
	b.do(chromedp.Navigate(base+"/t/"+instance+"#token="+watcher), chromedp.WaitVisible(chromedp.ID("switch")))
	b.do(chromedp.Click(chromedp.ID("switch-accept")), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("the read-only view", `!document.getElementById('readonly').hidden && document.getElementById('reset').hidden && document.getElementById('paste').hidden`)
	b.waitFunc("who is attached", `(() => { const t = document.getElementById('attached-list').textContent;
		return t.startsWith('attached: ') && t.includes('watcher (web, read-only)') && t.includes('(ssh)'); })()`)

	b.typeKeys("echo page-typed\r")
	b.waitFunc("the read-only notice for the first key", `((window.termgateFiles || {}).text || '').startsWith('read-only: your keys are not sent to the shell')`)
	b.do(chromedp.Evaluate[chromedp.Void](`termgate.conn.ws.send(new TextEncoder().encode('echo forced-typed\r'))`))
	b.waitMatch(`read-only: your input is not sent to the shell`)
	// Another window size: the page tells the gateway, which never applies
	// an observer's (the terminal stays at the shell's 80x24, the page says
	// the window is smaller), then an invalid resize whose error event
	// proves the valid one was handled first.
	cols := eval[int](b, `termgateSize.want.cols`)
	b.do(chromedp.EmulateViewport(640, 360))
	b.waitFunc("the page to resize", fmt.Sprintf(`termgateSize.want.cols !== %d`, cols))
	b.waitFunc("the observer's terminal at the shell's size", `termgate.term.cols === 80 && termgate.term.rows === 24 && termgateSize.note.startsWith('window smaller than the session (80×24)')`)
	b.do(chromedp.Evaluate[chromedp.Void](`termgate.conn.ws.send(JSON.stringify({type: 'resize', cols: 0, rows: 0}))`))
	b.waitMatch(`0x0 is out of range`)

	w.send(t, "echo ssh-typed-$((6*7)) size=$(stty size).\r")
	w.waitFor(t, "ssh-typed-42 size=24 80.")
	b.waitLine("ssh-typed-42 size=24 80.")
	w.mu.Lock()
	got := w.out.String()
	w.mu.Unlock()
	if strings.Contains(got, "page-typed") || strings.Contains(got, "forced-typed") {
		t.Errorf("an observer's input reached the shell; the SSH writer saw:\n%q", got)
	}
	b.do(chromedp.EmulateViewport(1100, 520)) // wide enough for the whole bar
	b.waitFunc("the page to resize back", `termgateSize.want.cols > 100 && termgate.term.cols === 80`)
	b.shot("11-observer")

	// The observer raises a hand; the SSH writer reads it and grants write
	// access; the page's keys then reach the shell.
	b.do(chromedp.Click(chromedp.ID("raise-hand")))
	w.waitFor(t, "[termgate] watcher via websocket raises a hand")
	if out := runSSH(t, gw, "grant "+instance+" watcher"); !strings.HasPrefix(out, "granted watcher write access") {
		t.Fatalf("grant: %q", out)
	}
	b.waitFunc("the granted badge", `document.getElementById('readonly').textContent === 'granted' && document.getElementById('raise-hand').hidden`)
	b.typeKeys("echo page-granted-$((6*7))\r")
	w.waitFor(t, "page-granted-42")
	// Live: the writer leaves, the list follows without a reload.
	n := eval[int](b, `termgateAttached.length`)
	_ = w.sess.Close()
	_ = w.client.Close()
	b.waitFunc("the list to drop the SSH writer", fmt.Sprintf(`termgateAttached.length === %d`, n-1))
}

// jsText is a JavaScript expression for the terminal's whole buffer, one
// line per row, trailing blanks trimmed.
const jsText = `(() => { const b = termgate.term.buffer.active, out = [];
	for (let i = 0; i < b.length; i++) out.push(b.getLine(i).translateToString(true));
	return out.join('\n'); })()`

// ---- prerequisites ----------------------------------------------------------

// needChromium returns Debian's Chromium (or $TERMGATE_CHROMIUM), and checks
// that the binary under test carries the page's assets. Either missing
// skips, or fails with TERMGATE_REQUIRE_CHROMIUM=1 (CI).
func needChromium(t *testing.T) string {
	t.Helper()
	require := os.Getenv("TERMGATE_REQUIRE_CHROMIUM") == "1"
	miss := func(why string) {
		t.Helper()
		if require {
			t.Fatal("TERMGATE_REQUIRE_CHROMIUM=1 but " + why)
		}
		t.Skip(why + " (set TERMGATE_REQUIRE_CHROMIUM=1 to make this a failure)")
	}
	if !web.Built() {
		miss("the page's assets are not bundled: run `make build` (npm ci and the esbuild bundle)")
	}
	path := os.Getenv("TERMGATE_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			miss("Chromium is not installed (apt-get install chromium)")
		}
	}
	return path
}

// needDocker checks the engine and builds the test image (no pull), once
// for the package; every test that needs them skips or fails alike.
func needDocker(t *testing.T) {
	t.Helper()
	dockerCheck.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.APIVersion}}").Run()
		if err != nil {
			dockerCheck.engine = fmt.Sprintf("the Docker engine is unreachable (docker version: %v)", err)
			return
		}
		out, err := exec.CommandContext(ctx, "bash", filepath.Join(moduleRoot(t), "scripts", "test-image.sh")).CombinedOutput()
		if err != nil {
			dockerCheck.image = fmt.Sprintf("scripts/test-image.sh: %v\n%s", err, out)
		}
	})
	if msg := dockerCheck.engine; msg != "" {
		if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
			t.Fatal("TERMGATE_REQUIRE_DOCKER=1 but " + msg)
		}
		t.Skip(msg + " (set TERMGATE_REQUIRE_DOCKER=1 to make this a failure)")
	}
	if dockerCheck.image != "" {
		t.Fatal(dockerCheck.image)
	}
}

// dockerCheck is needDocker's finding: why the engine or the image is
// missing.
var dockerCheck struct {
	once          sync.Once
	engine, image string
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..") // the test runs in web/
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ---- the gateway and the instance ------------------------------------------

type gateway struct {
	t                 *testing.T
	bin, dir, state   string
	label             string
	args              []string // flags of every run
	env               []string // added to every run's environment
	signIn            string   // path, query and fragment of the printed browser address
	sshAddr, httpAddr string
	hostKey           ssh.PublicKey
	signer            ssh.Signer

	proc *gatewayproc.Gateway // the current run
	logs *termtest.Stream     // its log
}

// startGateway runs cmd/termgate (built once: gatewayBin) with args on
// loopback (ports the OS picks, a temporary state directory where it
// generates its token and prints the browser address, one SSH key). Its
// instances are the containers with its own label, so it never touches
// anything else.
func startGateway(t *testing.T, args ...string) *gateway {
	t.Helper()
	return startGatewayEnv(t, nil, args...)
}

// startGatewayEnv is startGateway with env added to the gateway's
// environment (e.g. TERMGATE_HOLDER_BINARY=: t.Setenv would keep the test
// from running in parallel).
func startGatewayEnv(t *testing.T, env []string, args ...string) *gateway {
	t.Helper()
	dir := t.TempDir()
	gw := &gateway{t: t, dir: dir, bin: gatewayBin(t), state: filepath.Join(dir, "state"),
		label: "tgweb.gw=" + randomHex(4), args: args, env: env, logs: termtest.NewStream()}

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	gw.signer = signer
	if err := os.MkdirAll(gw.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gw.state, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gw.stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", gw.logs.String())
		}
	})

	gw.start()
	// The browser address is printed just after the listening line. Its
	// output is no terminal, so the token is TOKEN there, to be read from
	// the token file the line names, as a newcomer would.
	m, _ := gw.logs.WaitFor(regexp.MustCompile(`Browser:\s+(\S+)`), 0, 10*time.Second)
	if m == nil {
		t.Fatalf("the gateway printed no browser address; log:\n%s", gw.logs.String())
	}
	tok, err := os.ReadFile(filepath.Join(gw.state, "api_token"))
	if err != nil || len(strings.Fields(string(tok))) == 0 {
		t.Fatalf("no generated token in the state directory: %v", err)
	}
	u, err := url.Parse(strings.Replace(m[1], "#token=TOKEN", "#token="+strings.Fields(string(tok))[0], 1))
	if err != nil || u.Path == "" || !strings.HasPrefix(u.Fragment, "token=") || u.Fragment == "token=TOKEN" {
		t.Fatalf("the gateway printed no browser address with a place for the token (got %q); log:\n%s", m[1], gw.logs.String())
	}
	u.Scheme, u.Host = "", ""
	gw.signIn = u.String()
	if gw.hostKey, err = gw.proc.HostKey(); err != nil {
		t.Fatal(err)
	}
	return gw
}

// start runs the gateway and waits until it listens.
func (gw *gateway) start() {
	t := gw.t
	t.Helper()
	proc, err := gatewayproc.Start(context.Background(), gatewayproc.Config{
		Bin: gw.bin, StateDir: gw.state,
		// --audit-log -: the tests read the audit records in gw.logs.
		Args: append([]string{"--backend", "docker", "--instance-label", gw.label, "--log-level", "debug",
			"--audit-log", "-", "--record-dir", filepath.Join(gw.dir, "recordings")}, gw.args...),
		Env: gw.env,
	})
	if err != nil {
		t.Fatal(err)
	}
	gw.proc, gw.logs = proc, proc.Log
	gw.sshAddr, gw.httpAddr = proc.SSHAddr, proc.HTTPAddr
}

// stop sends SIGTERM and waits for the exit (the contract: within 10 s).
func (gw *gateway) stop() {
	if gw.proc == nil {
		return
	}
	if _, err := gw.proc.Stop(15 * time.Second); err != nil {
		gw.t.Error(err)
	}
	gw.proc = nil
}

// startInstance runs a test container carrying the gateway's label, and
// any other docker run flags given.
func startInstance(t *testing.T, label string, extra ...string) string {
	t.Helper()
	name := "web-" + randomHex(3)
	args := append([]string{"run", "-d", "--init", "--network", "none", "--label", label, "--label", "tgweb", "--name", name}, extra...)
	out, err := exec.Command("docker", append(args, "termgate-test:busybox")...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name
}

// ---- a loopback proxy that can drop the network ----------------------------

// proxy forwards TCP connections to the gateway; cut closes them all and
// refuses new ones until restore, as a network drop would.
type proxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	down   bool
	conns  map[net.Conn]struct{}

	// hold, write-locked by pause, stops every copy before its next
	// write: the gateway's writes then block as behind a client that
	// stopped reading (skip_browser_test.go).
	hold sync.RWMutex
}

// pause stops forwarding (both ways) until resume; the connections stay.
func (p *proxy) pause()  { p.hold.Lock() }
func (p *proxy) resume() { p.hold.Unlock() }

// heldWriter writes to w unless the proxy is paused.
type heldWriter struct {
	w io.Writer
	p *proxy
}

func (h heldWriter) Write(b []byte) (int, error) {
	h.p.hold.RLock()
	defer h.p.hold.RUnlock()
	return h.w.Write(b)
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down, target := p.down, p.target
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, up) {
			continue
		}
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(heldWriter{dst, p}, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// retarget sends new connections to another address (a restarted gateway).
func (p *proxy) retarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
}

// ---- the browser ------------------------------------------------------------

type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
	n     int

	mu       sync.Mutex
	console  []chromedp.ConsoleMessage
	accepted int
}

func startBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	shots := t.TempDir()
	if dir := os.Getenv("TERMGATE_ARTIFACTS"); dir != "" {
		shots = filepath.Join(dir, "browser")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1100, 700),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(tabCtx, 2*time.Minute)
	b := &browser{t: t, ctx: ctx, shots: shots}

	// Start the browser, then watch the console and accept the dialogs.
	if err := chromedp.Do(ctx); err != nil {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", chromium, err)
	}
	var wg sync.WaitGroup
	console := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	})
	wg.Go(func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			t.Logf("accepting the dialog %q", ev.Message)
			if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: ev.DefaultPrompt}); err != nil {
				t.Errorf("accepting the dialog: %v", err)
			}
			b.mu.Lock()
			b.accepted++
			b.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc() // waits for Chromium to exit, before the profile is removed
		wg.Wait()
	})
	return b
}

// step bounds one browser step: a stuck one fails the test in time.
func (b *browser) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, 20*time.Second)
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail("browser: %v", err)
	}
}

// fail takes a last screenshot, then fails the test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	b.shot("failure-" + strings.ReplaceAll(b.t.Name(), "/", "-")) // tests run in parallel
	b.t.Fatalf(format, args...)
}

func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluating %s: %v", expr, err)
	}
	return v
}

func (b *browser) textOf(id string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`document.getElementById(%q).textContent`, id))
}

// textAt is the text of the first element that matches a CSS selector.
func (b *browser) textAt(selector string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`document.querySelector(%q).textContent`, selector))
}

// text is the terminal's buffer.
func (b *browser) text() string {
	b.t.Helper()
	return eval[string](b, jsText)
}

// waitFunc polls a JavaScript condition for up to 15 s.
func (b *browser) waitFunc(what, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		b.fail("waiting for %s: %v\nterminal:\n%s", what, err, b.text())
	}
}

func (b *browser) waitConnected() {
	b.t.Helper()
	b.waitFunc("the connected status", `document.querySelector('#status.connected') !== null`)
}

// waitMatch waits until the terminal's text matches re.
func (b *browser) waitMatch(re string) []string {
	b.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(15 * time.Second)
	for {
		text := b.text()
		if m := rx.FindStringSubmatch(text); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			b.fail("the terminal never matched %s; it shows:\n%s", re, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lateReport is what the kernel echoes for a cursor-position report that
// reached the shell after it left line editing: busybox ash asks the
// terminal where the cursor is after every Enter, every attached browser
// answers, and when another client has typed a whole line first, the
// answer arrives while the command runs and is echoed before its output
// (^[[11;5R). Real terminals on a slow link show the same; a line that
// starts with it is still the line.
const lateReport = `(?:\^\[\[\d+;\d+R)*`

// waitLine waits for a line of the terminal that is exactly line.
func (b *browser) waitLine(line string) {
	b.t.Helper()
	b.waitMatch(`(?m)^` + lateReport + regexp.QuoteMeta(line) + `\s*$`)
}

// expectOnce checks that each line appears exactly once in the terminal:
// replay and resume never double output.
func (b *browser) expectOnce(lines ...string) {
	b.t.Helper()
	text := b.text()
	for _, l := range lines {
		n := len(regexp.MustCompile(`(?m)^`+lateReport+regexp.QuoteMeta(l)+`\s*$`).FindAllString(text, -1))
		if n != 1 {
			b.t.Errorf("the line %q appears %d times in the terminal, want once:\n%s", l, n, text)
		}
	}
}

// typeKeys types into the focused terminal as a keyboard does: for a
// character a rawKeyDown, a char (the keypress) and a keyUp; for Enter
// (\r) a rawKeyDown and a keyUp, which xterm turns into CR itself.
// (chromedp.KeyEvent sends keyDown events with text, which Chrome turns
// into a second keypress: xterm would type each character twice.)
func (b *browser) typeKeys(keys string) {
	b.t.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](`termgate.term.focus()`))
	ctx, cancel := b.step()
	defer cancel()
	key := func(p input.DispatchKeyEventParams) {
		b.t.Helper()
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, p); err != nil {
			b.fail("typing %q: %v", keys, err)
		}
	}
	for _, r := range keys {
		if r == '\r' {
			key(input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13})
			key(input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13})
			continue
		}
		k := string(r)
		key(input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Key: k})
		key(input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeChar, Key: k, Text: k, UnmodifiedText: k})
		key(input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: k})
	}
}

// ctrlShift presses Ctrl+Shift and the key with the given code ("KeyC").
func (b *browser) ctrlShift(code string) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	k := strings.TrimPrefix(code, "Key")
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Modifiers: 2 | 8, Key: k, Code: code, WindowsVirtualKeyCode: int64(k[0]),
		}); err != nil {
			b.fail("Ctrl+Shift+%s: %v", k, err)
		}
	}
}

// grantClipboard lets the page read and write the clipboard, as a user
// does by answering the browser's prompt.
func (b *browser) grantClipboard(origin string) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin,
		}); err != nil {
			b.fail("granting %s: %v", name, err)
		}
	}
}

func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.n++
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
	}
}

func (b *browser) dialogs() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted
}

// checkCookie checks the login cookie: HttpOnly and SameSite=Strict.
func (b *browser) checkCookie() {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		b.fail("reading cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name != "termgate_login" {
			continue
		}
		if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
			b.t.Errorf("login cookie: HttpOnly=%v SameSite=%q, want HttpOnly, Strict", c.HTTPOnly, c.SameSite)
		}
		return
	}
	b.t.Errorf("no login cookie after /?token= (cookies: %d)", len(res.Cookies))
}

// checkConsole fails on uncaught exceptions and Content-Security-Policy
// violations. Failed requests are expected (the 401 before sign-in, the
// refused connections of the network drop).
func (b *browser) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			b.t.Errorf("browser console: %s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1)
		}
	}
}

// ---- an SSH client on the same session --------------------------------------

type sshTerm struct {
	client *ssh.Client
	sess   *ssh.Session
	in     io.WriteCloser
	done   chan struct{}

	mu  sync.Mutex
	out strings.Builder
}

func attachSSH(t *testing.T, gw *gateway, instance string) *sshTerm {
	t.Helper()
	client, err := ssh.Dial("tcp", gw.sshAddr, &ssh.ClientConfig{
		User:            instance,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(gw.signer)},
		HostKeyCallback: ssh.FixedHostKey(gw.hostKey),
		Timeout:         10 * time.Second,
	})
	if err != nil {
		t.Fatalf("ssh: %v", err)
	}
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	st := &sshTerm{client: client, sess: sess, done: make(chan struct{})}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if st.in, err = sess.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm", 24, 80, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(st.done)
		buf := make([]byte, 4096)
		for {
			n, err := stdout.Read(buf)
			st.mu.Lock()
			st.out.Write(buf[:n])
			st.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = sess.Close()
		_ = client.Close()
		<-st.done
	})
	return st
}

func (s *sshTerm) send(t *testing.T, text string) {
	t.Helper()
	if _, err := io.WriteString(s.in, text); err != nil {
		t.Fatalf("ssh input: %v", err)
	}
}

func (s *sshTerm) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s.mu.Lock()
		got := s.out.String()
		s.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SSH client never saw %q; it got:\n%q", want, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runSSH runs a gateway command (ssh termgate@HOST CMD) and returns its
// stdout; a failure fails the test.
func runSSH(t *testing.T, gw *gateway, cmd string) string {
	t.Helper()
	client, err := ssh.Dial("tcp", gw.sshAddr, &ssh.ClientConfig{
		User:            "termgate",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(gw.signer)},
		HostKeyCallback: ssh.FixedHostKey(gw.hostKey),
		Timeout:         10 * time.Second,
	})
	if err != nil {
		t.Fatalf("ssh: %v", err)
	}
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var stderr strings.Builder
	sess.Stderr = &stderr
	out, err := sess.Output(cmd)
	if err != nil {
		t.Fatalf("ssh %s: %v; stderr %q", cmd, err, stderr.String())
	}
	return string(out)
}
