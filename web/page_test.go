package web_test

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// relTimes replaces "@-2h" and the like in s with the time that far from
// now (RFC 3339): the page shows ages and reap times relative to now.
func relTimes(s string) string {
	return regexp.MustCompile(`@[-+]\d+[hm]`).ReplaceAllStringFunc(s, func(m string) string {
		d, _ := time.ParseDuration(m[1:])
		return time.Now().Add(d).UTC().Format(time.RFC3339)
	})
}

// The gateway's answers for the list (websock/api.go, recordlist.go):
// web1 attached, web2 idle and watched only, db1 with no session.
const listInstancesJSON = `[
 {"name":"web1","session":{"instance":"web1","session":"aa11","created":"@-2h","clients":2,"bytes_out":2048,"recording":"web1/aa11.cast"},
  "image":"nginx:1.27","status":"Up 2 hours","labels":{"termgate.owner":"web-team"},"read_only":false},
 {"name":"web2","session":{"instance":"web2","session":"bb22","created":"@-50m","clients":0,"idle_since":"@-20m","reap_at":"@+40m","bytes_out":10},
  "image":"alpine:3.20","status":"Up 5 minutes","read_only":true},
 {"name":"db1","session":null,"image":"postgres:16","status":"Up 3 days","labels":{"termgate.tier":"data","termgate.owner":"dba"},"read_only":false}
]`

const listRecordingsJSON = `[
 {"instance":"web1","session":"aa11","size":4096,"modified":"@-0m","started":"@-2h","duration":3600,"live":true},
 {"instance":"db1","session":"cc33","size":100,"modified":"@-3h","started":"@-3h","duration":75.5,"live":false},
 {"instance":"web1","session":"dd44","size":2000000,"modified":"@-26h","started":"@-26h","duration":12,"live":false}
]`

// TestPageList (issue 22 item 7): the list shows each instance's image,
// status, labels and session state, marks the rows this token may only
// watch, and a search box filters it; the recordings list groups the
// token's recordings by instance, each linked to the player.
func TestPageList(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	base := servePlayer(t)
	b := startBrowser(t, chromium)

	b.do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("picker")))
	b.waitFunc("the list", `(window.termgateList || {}).rows === 3 && termgateList.recordings === 3`)
	row := func(name string) string {
		return eval[string](b, fmt.Sprintf(`[...document.querySelector('#instances tr[data-instance=%q]').cells].map(c => c.textContent).join(' | ')`, name))
	}
	for name, want := range map[string][]string{
		"web1": {"web1 | attached: 2 clients", "nginx:1.27 | Up 2 hours | termgate.owner=web-team | "},
		"web2": {"web2 | idle for", "alpine:3.20 | Up 5 minutes |  | read-only"},
		"db1":  {"db1 | no session", "postgres:16 | Up 3 days | termgate.owner=dbatermgate.tier=data | "},
	} {
		got := row(name)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("row %s = %q, want it to contain %q", name, got, w)
			}
		}
	}
	if !eval[bool](b, `document.querySelector('#instances tr[data-instance="web2"]').classList.contains('observer')`) {
		t.Error("the read-only row is not marked")
	}
	b.shot("list")

	// The search box: every word must match, in any column.
	for q, want := range map[string]string{"": "web1 web2 db1", "up hours": "web1", "READ-ONLY": "web2", "termgate.owner": "web1 db1", "alpine web": "web2", "nothing": ""} {
		b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const f = document.getElementById('instances-filter');
			f.value = %q; f.dispatchEvent(new Event('input')); })()`, q)))
		got := eval[string](b, `[...document.querySelectorAll('#instances tbody tr')].filter(r => !r.hidden).map(r => r.dataset.instance).sort().join(' ')`)
		w := strings.Fields(want)
		sort.Strings(w)
		if got != strings.Join(w, " ") {
			t.Errorf("search %q shows %q, want %q", q, got, want)
		}
	}
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('instances-filter').value = ''`), chromedp.SendKeys(chromedp.ID("instances-filter"), "db"))
	b.waitFunc("the typed search", `termgateList.shown === 1 && termgateList.recordings === 1`)
	// A group whose first row is filtered out still names its instance.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('instances-filter'); f.value = 'dd44'; f.dispatchEvent(new Event('input')); })()`))
	if got := b.textAt(`#recordings-table tr[data-session="dd44"] td.instance`); got != "web1" {
		t.Errorf("filtered to web1's older recording, its row names %q, want web1", got)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('instances-filter'); f.value = 'db'; f.dispatchEvent(new Event('input')); })()`))
	if c := b.textOf("instances-count"); c != "1 of 3" {
		t.Errorf("the count says %q, want 1 of 3", c)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('instances-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`))

	// Recordings: by instance (db1, then web1 newest first), the live one
	// says so, each links to the player.
	recs := eval[string](b, `[...document.querySelectorAll('#recordings-table tbody tr')].map(r => r.dataset.instance + '/' + r.dataset.session + ' ' + r.cells[2].textContent).join(', ')`)
	if recs != "db1/cc33 1 min, web1/aa11 live, web1/dd44 12 s" {
		t.Errorf("recordings listed as %q", recs)
	}
	href := eval[string](b, `document.querySelector('#recordings-table tr[data-session="cc33"] a.play').getAttribute('href')`)
	if href != "/#play=db1/cc33" {
		t.Errorf("the recording links %q, want /#play=db1/cc33", href)
	}
	b.checkConsole()
}
