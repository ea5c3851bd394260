package web_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserAway: a page that left a session and comes back shows what
// happened meanwhile (issue 23, item 4) in a banner over the terminal,
// not in the terminal, with the command that finished and its exit
// status; × dismisses it.
func TestBrowserAway(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	gw := startGateway(t)
	name := startInstance(t, gw.label)
	b := startBrowser(t, chromium)
	base := "http://" + gw.httpAddr
	tok := signInToken(t, gw)
	waitClients := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var list []struct {
				Instance string
				Clients  int
			}
			resp := get(t, "GET", base+"/api/sessions", tok)
			err := json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if s.Instance == name && s.Clients == n {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never had %d clients: %+v", name, n, list)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.typeKeys("echo here-$((6*7))\r")
	b.waitLine("here-42")
	b.do(chromedp.Navigate(base + "/")) // the page leaves: a detach
	waitClients(0)

	// Meanwhile an SSH key (another person) runs a command that fails,
	// marked as a shell with OSC 133 integration would.
	st := attachSSH(t, gw, name)
	st.send(t, `printf '\033]133;B\007make test\r\n\033]133;C\007FAIL-%s\r\n\033]133;D;2\007' $((6*7))`+"\n")
	st.waitFor(t, "FAIL-42")

	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("the away banner", `!document.getElementById('away').hidden &&
		/^While you were away \(\d+s\): \d+ B of output, 1 command finished: make test \(exit 2\)$/.test(document.getElementById('away-text').textContent)`)
	b.shot("away-01-banner")
	if text := b.text(); regexpMatch(`away|While you were`, text) {
		t.Errorf("the summary was written into the terminal:\n%s", text)
	}
	b.do(chromedp.Click(chromedp.ID("away-close")))
	b.waitFunc("the banner dismissed", `document.getElementById('away').hidden`)
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
