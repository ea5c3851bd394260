package web_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSize: the shell's window size with a page and an SSH client
// (contract, session semantics 4; issue 23 item 1). The page shows the
// session at another client's smaller size, says when its window is
// smaller than the session, goes back to its own size when the other
// client leaves, and pins and unpins the size.
func TestBrowserSize(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	gw := startGateway(t)
	name := startInstance(t, gw.label)
	b := startBrowser(t, chromium)
	base := "http://" + gw.httpAddr
	tok := signInToken(t, gw)
	sessionSize := func() (string, bool) {
		var list []struct {
			Instance, Size string
			Pinned         bool `json:"size_pinned"`
		}
		resp := get(t, "GET", base+"/api/sessions", tok)
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Instance == name {
				return s.Size, s.Pinned
			}
		}
		return "", false
	}
	waitSession := func(want string, pinned bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			got, p := sessionSize()
			if got == want && p == pinned {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("session size %q pinned %v, want %q pinned %v", got, p, want, pinned)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	b.do(chromedp.EmulateViewport(1000, 600))
	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.typeKeys("echo in-$((6*7))\r")
	b.waitLine("in-42")
	own := fmt.Sprintf("%dx%d", eval[int](b, `termgateSize.want.cols`), eval[int](b, `termgateSize.want.rows`))
	if eval[int](b, `termgateSize.want.cols`) <= 80 {
		t.Fatalf("a 1000 px wide page fits %s: the test needs more than 80 columns", own)
	}
	waitSession(own, false)

	// A smaller SSH client joins: the page draws the session at 80x24.
	st := attachSSH(t, gw, name)
	waitSession("80x24", false)
	b.waitFunc("the page at the SSH client's size", `termgate.term.cols === 80 && termgate.term.rows === 24 && termgateSize.note === "session at 80×24 (another client's size)"`)
	b.shot("size-01-smaller-client")
	// It leaves: the page's size applies again, with nobody typing.
	_ = st.sess.Close()
	_ = st.client.Close()
	waitSession(own, false)
	b.waitFunc("the page at its own size again", `termgate.term.cols === termgateSize.want.cols && termgateSize.note === ""`)

	// A narrow window, and the SSH client again: the page says its window
	// is smaller, and typing makes the size the page's.
	b.do(chromedp.EmulateViewport(480, 300))
	b.waitFunc("the narrow page's size", `termgateSize.want.cols < 80`)
	narrow := fmt.Sprintf("%dx%d", eval[int](b, `termgateSize.want.cols`), eval[int](b, `termgateSize.want.rows`))
	waitSession(narrow, false)
	st = attachSSH(t, gw, name)
	waitSession("80x24", false)
	b.waitFunc("the smaller-window notice", `termgateSize.note === "window smaller than the session (80×24): type to make it yours"`)
	b.shot("size-02-smaller-window")
	b.typeKeys("echo mine\r")
	waitSession(narrow, false)
	b.waitFunc("the notice gone after typing", `termgateSize.note === ""`)

	// Pin and unpin.
	b.do(chromedp.EmulateViewport(1000, 600))
	b.waitFunc("the wide page's size", `termgateSize.want.cols > 80`)
	b.waitFunc("the session at the wide page's size", `(() => { const w = termgateSize.want; return termgateSize.shown.cols === w.cols && termgateSize.shown.rows === w.rows; })()`)
	waitSession(fmt.Sprintf("%dx%d", eval[int](b, `termgateSize.want.cols`), eval[int](b, `termgateSize.want.rows`)), false)
	b.do(chromedp.Click(chromedp.ID("pin-size")))
	b.waitFunc("the pinned note", `termgateSize.pinned && termgateSize.note.startsWith("pinned at ")`)
	pinned, _ := sessionSize()
	waitSession(pinned, true)
	st.send(t, "echo ssh\n") // the SSH client types: the pin holds
	time.Sleep(300 * time.Millisecond)
	waitSession(pinned, true)
	b.do(chromedp.Click(chromedp.ID("pin-size")))
	b.waitFunc("unpinned", `!termgateSize.pinned`)
	if _, p := sessionSize(); p {
		t.Fatal("still pinned after Unpin size")
	}

	// Keep (the prompt's default, 8h): the list then says when the session
	// is reaped, kept, once nobody is attached.
	b.do(chromedp.Click(chromedp.ID("keep")))
	b.waitFunc("the keep's result", `((window.termgateFiles || {}).text || '').startsWith('kept until ')`)
	_ = st.sess.Close()
	_ = st.client.Close()
	b.do(chromedp.Click(chromedp.ID("back")), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the reap time in the list", fmt.Sprintf(
		`[...document.querySelectorAll('#instances tbody tr')].some(r => r.cells[0].textContent === %q && /reaped in (8 h 0 min|7 h 59 min) \(kept\)$/.test(r.cells[1].textContent))`, name))
	b.shot("size-03-kept")
}
