package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// stormBound is how long /metrics, /api/sessions and an echo may take
// during the storm: generous (they answer in milliseconds when nothing is
// wrong), but far below the 33 s they were blocked for (issue 20 D4).
const stormBound = 5 * time.Second

// Issue 20 D4: one client's resize storm (WebSocket resize messages and
// SSH window-change requests as fast as the clients can send them, to
// random sizes up to 1000x1000, while the shell prints) neither stalls
// the gateway's /metrics and /api/sessions nor its own session: a fresh
// attach during the storm is answered, an echo typed during it comes back,
// and right after it the shell has the size sent last. The storm gets no
// error events back (the excess is coalesced, not refused).
func TestResizeStorm(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}})
	name := g.name("web-1")

	ws := g.wsQuery(t, name, "cols=80&rows=24")
	ws.roundTrip()
	ws.send("while :; do seq 1 200; sleep 0.05; done &")
	ws.expect(`\n200\r?\n`)
	ssh := g.attach(t, keyAdmin, name, 80, 24)
	ssh.roundTrip()

	rssBefore := rssMiB(g.proc.PID())
	const storm = 6 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), storm)
	defer cancel()
	var wg sync.WaitGroup
	var wsSent, sshSent int
	var wsErr, sshErr error
	// Random sizes, as the report's storm: each one new to the emulator.
	size := func(r *rand.Rand) (int, int) { return 1 + r.IntN(1000), 1 + r.IntN(1000) }
	wg.Add(2)
	go func() { // the WebSocket client's storm; nothing else writes to ws meanwhile
		defer wg.Done()
		r := rand.New(rand.NewPCG(1, 2))
		for ; ctx.Err() == nil; wsSent++ {
			cols, rows := size(r)
			msg := fmt.Sprintf(`{"type":"resize","cols":%d,"rows":%d}`, cols, rows)
			if wsErr = ws.conn.WriteMessage(websocket.TextMessage, []byte(msg)); wsErr != nil {
				return
			}
		}
	}()
	go func() { // the SSH client's storm of window-change requests
		defer wg.Done()
		r := rand.New(rand.NewPCG(3, 4))
		for ; ctx.Err() == nil; sshSent++ {
			cols, rows := size(r)
			if sshErr = ssh.sess.WindowChange(rows, cols); sshErr != nil {
				return
			}
		}
	}()

	// Meanwhile: the gateway's endpoints answer, and so does the shell.
	client := &http.Client{Timeout: stormBound}
	get := func(path string) error {
		req, err := http.NewRequest(http.MethodGet, g.baseURL+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+g.tokens[tokAdmin])
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s during the resize storm: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s during the resize storm: %s after %v", path, resp.Status, time.Since(start))
		}
		return nil
	}
	attach := func() error {
		d := websocket.Dialer{HandshakeTimeout: stormBound}
		start := time.Now()
		c, resp, err := d.Dial(g.wsURL(name, "cols=80&rows=24"), bearer(g.tokens[tokAdmin]))
		if err != nil {
			return fmt.Errorf("an attach during the resize storm: %v after %v (%s)", err, time.Since(start).Round(time.Millisecond), describeResponse(resp))
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(stormBound))
		if _, data, err := c.ReadMessage(); err != nil || !strings.Contains(string(data), `"attached"`) {
			return fmt.Errorf("an attach during the resize storm: %q, %v", data, err)
		}
		return nil
	}
	var failures []string
	polls, echoes := 0, 0
	slowest := map[string]time.Duration{} // reported, not asserted
	timed := func(what string, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			failures = append(failures, err.Error())
		}
		slowest[what] = max(slowest[what], time.Since(start))
	}
	for ctx.Err() == nil {
		timed("attach", attach)
		for _, path := range []string{"/metrics", "/api/sessions"} {
			timed(path, func() error { return get(path) })
			polls++
		}
		cmd, word := marker("storm")
		ssh.send(cmd)
		start := time.Now()
		ok := waitOutput(ssh, word, stormBound)
		slowest["echo"] = max(slowest["echo"], time.Since(start))
		if !ok {
			failures = append(failures, fmt.Sprintf("the echo of %q did not come back within %v during the resize storm", cmd, stormBound))
		} else {
			echoes++
		}
		time.Sleep(200 * time.Millisecond)
	}
	wg.Wait()
	if wsErr != nil || sshErr != nil {
		t.Fatalf("the storm's clients were cut: websocket %v, ssh %v", wsErr, sshErr)
	}
	rssAfter := rssMiB(g.proc.PID())
	t.Logf("storm: %d WebSocket resizes, %d SSH window changes in %v; %d polls, %d echoes; slowest %v", wsSent, sshSent, storm, polls, echoes, slowest)
	if len(failures) > 0 {
		t.Fatalf("%d failures during the storm, e.g.:\n%s", len(failures), strings.Join(failures[:min(len(failures), 5)], "\n"))
	}

	// The last size sent is the shell's, at once.
	ws.control(`{"type":"resize","cols":77,"rows":21}`)
	ws.send("kill %1; stty size")
	if m, _ := ws.out.WaitFor(regexp.MustCompile(`(?m)^21 77\r?$`), ws.seen, stormBound); m == nil {
		t.Fatalf("stty size right after the storm did not show 21 77 within %v:\n%q", stormBound, tail(ws.out.String(), 2000))
	}
	time.Sleep(3 * time.Second) // reported only: the runtime returns memory at its own pace
	t.Logf("gateway RSS: %s before the storm, %s at its end, %s 3 s later", rssBefore, rssAfter, rssMiB(g.proc.PID()))
	for _, ev := range ws.pendingEvents() {
		if ev.Type == "error" {
			t.Fatalf("the storm got error events back, e.g. %s", ev.raw)
		}
	}
}

// waitOutput waits up to d for word in the SSH terminal's output after
// what earlier expects consumed, and consumes it.
func waitOutput(tm *term, word string, d time.Duration) bool {
	m, at := tm.out.WaitFor(regexp.MustCompile(regexp.QuoteMeta(word)), tm.seen, d)
	if m == nil {
		return false
	}
	tm.seen = at
	return true
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// rssMiB is a process's resident memory, for the log.
func rssMiB(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return "?"
}
