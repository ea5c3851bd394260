package web_test

import (
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/termgate/termgate/web"
)

// serveTabs serves the page with the API routes its tabs read, as the
// gateway answers them: web1 has the named session build, run as deploy.
// GET /api/whoami lists *logins (the credential's logins, issue 36 item
// 2). The terminal's WebSocket is not served: these tests look at what the
// page asks for, not at a shell.
func serveTabs(t *testing.T, logins *atomic.Value) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	js := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
	mux.HandleFunc("GET /api/whoami", func(w http.ResponseWriter, r *http.Request) {
		js(w, fmt.Sprintf(`{"name":"tester","via":"cookie","instances":[],"logins":%s}`, logins.Load()))
	})
	const build = `{"instance":"web1","name":"build","login":"deploy","session":"bb01","created":"@-5m","clients":0,
		"idle_since":"@-1m","reap_at":"@+29m","bytes_out":10,"attached":[]}`
	mux.HandleFunc("GET /api/sessions", func(w http.ResponseWriter, r *http.Request) {
		js(w, relTimes(`[`+build+`]`))
	})
	mux.HandleFunc("GET /api/instances", func(w http.ResponseWriter, r *http.Request) {
		js(w, relTimes(`[{"name":"web1","session":null,"sessions":[`+build+`],"read_only":false}]`))
	})
	mux.HandleFunc("GET /api/recordings", func(w http.ResponseWriter, r *http.Request) { js(w, `[]`) })
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

// TestPageTabsLogins: a session's login travels with it, and "+" offers a
// login picker only when the credential may use more than one login.
//   - a tab (and the list's row) of a session run as deploy links
//     /t/web1+build?login=deploy, and a bookmark without the login
//     attaches with the session's own, as the list says;
//   - with logins [app, deploy] "+" offers both, and the new session's
//     address carries the one picked; with '*', any login can be typed;
//   - with one login (or none listed) there is no picker, and no login= in
//     the address: the gateway's default applies.
func TestPageTabsLogins(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	var logins atomic.Value
	logins.Store(`["app","deploy"]`)
	base := serveTabs(t, &logins)
	b := startBrowser(t, chromium)

	// The list: the named session under its instance, with its login.
	b.do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the build row", `(() => { const r = document.querySelector('#instances tr.session-row[data-of="web1"][data-name="build"]');
		return r && r.cells[1].textContent.startsWith('as deploy · idle for') && r.cells[1].textContent.includes('reaped in'); })()`)
	if href := b.textAt(`#instances tr.session-row[data-name="build"] a`); href != "+build" {
		t.Errorf("the build row's link says %q, want +build", href)
	}
	if href := eval[string](b, `document.querySelector('#instances tr.session-row[data-name="build"] a').getAttribute('href')`); href != "/t/web1+build?login=deploy" {
		t.Errorf("the build row links %q, want /t/web1+build?login=deploy", href)
	}

	// A bookmark without the login: the session's own, from the list.
	b.do(chromedp.Navigate(base+"/t/web1+build"), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitFunc("the build tab with its login", `(() => { const a = document.querySelector('#tab-list a.tab.current');
		return a && a.dataset.name === 'build' && a.querySelector('.tab-login') && a.querySelector('.tab-login').textContent === 'deploy' &&
			a.getAttribute('href') === '/t/web1+build?login=deploy'; })()`)
	b.waitFunc("the attach as deploy", `termgate.conn.login === 'deploy' && termgate.conn.attempts > 0`)

	// "+" with two logins: a picker; the address carries the one picked.
	b.do(chromedp.Click(chromedp.ID("new-session")), chromedp.WaitVisible(chromedp.ID("new-session-dialog")))
	if got := eval[string](b, `[...document.getElementById('new-session-login').options].map(o => o.value).join(',')`); got != "app,deploy" {
		t.Errorf("the login picker offers %q, want app,deploy", got)
	}
	if !eval[bool](b, `!document.getElementById('new-session-login-row').hidden && !document.getElementById('new-session-login').hidden`) {
		t.Error("two logins, and no login picker")
	}
	b.shot("tabs-login-picker")
	b.do(chromedp.SetValue(chromedp.ID("new-session-login"), "deploy"),
		chromedp.SendKeys(chromedp.ID("new-session-name"), "x1"), chromedp.Click(chromedp.ID("new-session-go")))
	b.waitPath("/t/web1+x1", "?login=deploy")
	b.waitFunc("the new session attached as deploy", `typeof termgate === 'object' && termgate.conn.login === 'deploy' && termgate.conn.sessName === 'x1'`)

	// '*': any login, typed.
	logins.Store(`["app","*"]`)
	b.do(chromedp.Navigate(base+"/t/web1"), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.do(chromedp.Click(chromedp.ID("new-session")), chromedp.WaitVisible(chromedp.ID("new-session-dialog")))
	if !eval[bool](b, `!document.getElementById('new-session-login-any').hidden && document.getElementById('new-session-login').hidden &&
		document.getElementById('new-session-login-any').value === 'app'`) {
		t.Error("with logins=app,* the page offers no field for any login (prefilled with app)")
	}
	b.do(chromedp.SetValue(chromedp.ID("new-session-login-any"), "1000"),
		chromedp.SendKeys(chromedp.ID("new-session-name"), "x2"), chromedp.Click(chromedp.ID("new-session-go")))
	b.waitPath("/t/web1+x2", "?login=1000")

	// One login: no picker, no login= (the gateway's default applies).
	for _, l := range []string{`["app"]`, `null`} {
		logins.Store(l)
		b.do(chromedp.Navigate(base+"/t/web1"), chromedp.WaitVisible(chromedp.ID("terminal")))
		b.do(chromedp.Click(chromedp.ID("new-session")), chromedp.WaitVisible(chromedp.ID("new-session-dialog")))
		if !eval[bool](b, `document.getElementById('new-session-login-row').hidden`) {
			t.Errorf("logins %s: a login picker with nothing to pick", l)
		}
		b.do(chromedp.SendKeys(chromedp.ID("new-session-name"), "x3"), chromedp.Click(chromedp.ID("new-session-go")))
		b.waitPath("/t/web1+x3", "")
	}
	// An existing session opens with its own login, whatever is picked.
	logins.Store(`["app","deploy"]`)
	b.do(chromedp.Navigate(base+"/t/web1"), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitFunc("the build tab", `document.querySelector('#tab-list a.tab[data-name="build"]') !== null`)
	b.do(chromedp.Click(chromedp.ID("new-session")), chromedp.WaitVisible(chromedp.ID("new-session-dialog")))
	b.do(chromedp.SetValue(chromedp.ID("new-session-login"), "app"),
		chromedp.SendKeys(chromedp.ID("new-session-name"), "build"), chromedp.Click(chromedp.ID("new-session-go")))
	b.waitPath("/t/web1+build", "?login=deploy")
}

// waitPath waits, for up to 15 s, until the browser shows the address
// path with the query search ("" none), asking afresh each time (the page
// that navigates is replaced).
func (b *browser) waitPath(path, search string) {
	b.t.Helper()
	var last string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := b.step()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + location.search`))
		cancel()
		if err == nil && v == path+search {
			return
		}
		last = fmt.Sprint(v, err)
	}
	b.fail("the browser never went to %s%s (last: %s)", path, search, last)
}
