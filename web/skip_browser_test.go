package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Contract, session semantics 8, in Chromium: a page whose connection
// stops taking output (the proxy between it and the gateway pauses) while
// 30 MB are printed is brought forward when it flows again: the status
// bar says "skipped … to catch up", the terminal does not, the page
// stays on the same connection and the shell answers.
func TestBrowserIsBroughtForward(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	gw := startGateway(t)
	name := startInstance(t, gw.label)
	px := startProxy(t, gw.httpAddr)
	b := startBrowser(t, chromium)
	base := "http://" + px.addr()

	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	since := eval[float64](b, `termgate.conn.since`)

	b.typeKeys("sleep 1; head -c 30000000 /dev/zero | tr '\\0' x; echo EN''D$((6*7))\r")
	b.waitMatch(`EN''D\$\(\(6\*7\)\)`) // the keys are through: the shell echoed them
	px.pause()
	paused := true
	defer func() {
		if paused {
			px.resume()
		}
	}()
	waitBytesOut(t, gw, name, 30_000_000)
	px.resume()
	paused = false

	b.waitFunc("the skip in the status bar", `document.getElementById('status').textContent.includes('to catch up')`)
	status := b.textOf("status")
	if !strings.Contains(status, "skipped") || eval[float64](b, `window.termgateSkipped || 0`) < 1e6 {
		t.Fatalf("status %q, skipped %v bytes: want megabytes skipped", status, eval[float64](b, `window.termgateSkipped || 0`))
	}
	b.typeKeys("echo al''ive\r")
	b.waitMatch(`(?m)^alive\s*$`)
	if strings.Contains(b.text(), "skipped") {
		t.Errorf("the skip was written into the terminal:\n%s", b.text())
	}
	if again := eval[float64](b, `termgate.conn.since`); again != since {
		t.Errorf("the page reconnected (attached at %v, then %v): it should have stayed on its connection", since, again)
	}
	b.shot("skip-brought-forward")
}

// waitBytesOut polls GET /api/sessions (the gateway's own address) until
// the instance's session has produced n bytes.
func waitBytesOut(t *testing.T, gw *gateway, instance string, n int64) {
	t.Helper()
	u, _ := url.Parse(gw.signIn)
	tok := u.Query().Get("token")
	if tok == "" {
		tok = strings.TrimPrefix(u.Fragment, "token=")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, "http://"+gw.httpAddr+"/api/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var all []struct {
				Instance string `json:"instance"`
				BytesOut int64  `json:"bytes_out"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&all)
			resp.Body.Close()
			for _, s := range all {
				if s.Instance == instance && s.BytesOut >= n {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session did not produce %d bytes", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
