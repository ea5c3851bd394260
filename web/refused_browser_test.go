package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// A session the gateway refuses to open says why in the page: past
// --max-sessions-per-instance, a third session's tab shows the gateway's
// own message (the failed handshake's status is hidden from the page, so
// it asks the terminal route without the upgrade), not "not reachable".
func TestBrowserRefusedSessionSaysWhy(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	gw := startGateway(t, "--max-sessions-per-instance", "2")
	name := startInstance(t, gw.label)
	b := startBrowser(t, chromium)
	base := "http://" + gw.httpAddr

	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	for _, page := range []string{"/t/" + name, "/t/" + name + "+one"} {
		b.do(chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.ID("terminal")))
		b.waitConnected()
	}
	b.do(chromedp.Navigate(base+"/t/"+name+"+two"), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitFunc("the gateway's refusal in the status", `(() => {
		const s = document.getElementById('status');
		return s.classList.contains('reconnecting') && s.textContent.includes('already has 2 sessions') &&
			!s.textContent.includes('not reachable'); })()`)
	b.shot("session-refused")
}
