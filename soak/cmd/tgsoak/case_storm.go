package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// caseResizeStorm has one WebSocket client send resizes as fast as it can
// for StormFor (random sizes up to 1000x1000, then 100x30 last) while the
// shell prints steadily. Meanwhile /metrics and /api/sessions must answer
// within stormBound; afterwards the session must answer at once with the
// last size, and the gateway's memory must come back down.
func caseResizeStorm(ctx context.Context, r *runner, res *result) {
	g, err := r.mainGateway(ctx)
	if !res.check(err, "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "storm", 1)
	if !res.check(err, "start a container") {
		return
	}
	inst := names[0]
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}
	w, err := g.attachWS(ctx, inst)
	if !res.check(err, "attach the storming client") {
		return
	}
	defer w.Leave(closeRST)
	d := drain(w)
	if _, err := w.Write([]byte("while :; do i=0; while [ $i -lt 200 ]; do echo storm-line-$i; i=$((i+1)); done; usleep 50000; done &\n")); !res.check(err, "start the output") {
		return
	}

	// The HTTP endpoints, polled from another goroutine.
	stop := make(chan struct{})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest = map[string]time.Duration{}
		failed  []string
	)
	for _, path := range []string{"/metrics", "/api/sessions"} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(250 * time.Millisecond):
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				t0 := time.Now()
				status, _, err := g.request(rctx, http.MethodGet, path)
				took := time.Since(t0)
				cancel()
				mu.Lock()
				slowest[path] = max(slowest[path], took)
				if err != nil || status != http.StatusOK {
					failed = append(failed, fmt.Sprintf("%s: %d %v", path, status, err))
				}
				mu.Unlock()
			}
		})
	}
	sent, t0 := 0, time.Now()
	// A gateway that stops reading must not hang the storm itself.
	_ = w.c.SetWriteDeadline(t0.Add(r.cfg.StormFor + stormBound))
	for time.Since(t0) < r.cfg.StormFor {
		cols, rows := 1+rand.IntN(1000), 1+rand.IntN(1000)
		if err := w.control(fmt.Sprintf(`{"type":"resize","cols":%d,"rows":%d}`, cols, rows)); err != nil {
			res.failf("resize %d: %v", sent, err)
			break
		}
		sent++
	}
	stormTook := time.Since(t0)
	res.check(w.control(`{"type":"resize","cols":100,"rows":30}`), "the last resize")
	_ = w.c.SetWriteDeadline(time.Time{})
	peak, _, _ := procStatus(g.pid())

	// The last size sent wins: within a bound, the shell's terminal has it.
	var size string
	t2 := time.Now()
	for time.Since(t2) < stormBound {
		size, err = r.inContainer(ctx, inst, `for p in /proc/[0-9]*; do t=$(readlink $p/fd/0 2>/dev/null); case $t in /dev/pts/*) stty -F $t size 2>/dev/null && exit 0 ;; esac; done`)
		if size = strings.TrimSpace(size); err != nil || size == "30 100" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.check(err, "stty size in the container") && size != "30 100" {
		res.failf("the shell's terminal is %q %s after the storm, want the last size sent, 30 100", size, stormBound)
	} else {
		res.notef("the last size sent is the terminal's %s after the storm", time.Since(t2).Round(time.Millisecond))
	}
	// (before a second client attaches: its own size may then win)
	// The session answers, at the last size, through a second client.
	t1 := time.Now()
	a, err := g.attachWS(ctx, inst)
	if res.check(err, "attach after the storm") {
		_, err = command(a, "stty size", stormBound)
		res.check(err, "the session answers after the storm")
		_ = a.Leave(closeRST)
	}
	answered := time.Since(t1)
	close(stop)
	wg.Wait()
	mu.Lock()
	res.notef("%d resizes in %s (%.0f/s); /metrics at worst %s, /api/sessions %s; reattach and stty size %s after; RSS %d MiB at the storm's end",
		sent, stormTook.Round(time.Millisecond), float64(sent)/stormTook.Seconds(),
		slowest["/metrics"].Round(time.Millisecond), slowest["/api/sessions"].Round(time.Millisecond),
		answered.Round(time.Millisecond), peak>>10)
	for path, took := range slowest {
		if took > stormBound {
			res.failf("%s took %s during the storm (bound %s)", path, took.Round(time.Millisecond), stormBound)
		}
	}
	if len(failed) > 0 {
		res.failf("%d failed requests during the storm, e.g. %s", len(failed), failed[0])
	}
	mu.Unlock()
	_ = w.Leave(closeRST)
	<-d.done
	r.finish(ctx, g, res, base)
	// The heap in use, not RSS: the runtime returns freed pages to the OS
	// only over minutes.
	if a := res.After; a != nil {
		// Heap in use counts garbage until the next collection, which an
		// idle gateway may not run for minutes (CI once saw 36 MiB of it):
		// ask again for a few seconds, each /metrics request allocating
		// toward the collection that gives the screen's memory back.
		for deadline := time.Now().Add(stormHeapWait); a.HeapKiB > base.HeapKiB+stormHeap && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			if s, err := g.sample(ctx); err == nil {
				a = &s
			}
		}
		res.After = a
		res.notef("heap in use %d MiB before, %d MiB after; RSS %d MiB before, %d MiB after", base.HeapKiB>>10, a.HeapKiB>>10, base.RSSKiB>>10, a.RSSKiB>>10)
		if a.HeapKiB > base.HeapKiB+stormHeap {
			res.failf("heap in use %d MiB after the storm, from %d MiB before: the huge screen's memory was not given back", a.HeapKiB>>10, base.HeapKiB>>10)
		}
	}
}

// stormBound is how long a request may take during the storm: far above
// a quiet answer (milliseconds), far below the 33 s seen in issue 20 D4.
const stormBound = 5 * time.Second

// stormHeap is how much more heap the gateway may keep in use after the
// storm (the session itself: its ring and scrollback); a 1000x1000
// screen and its alternate screen kept would be 2 million cells, over
// 30 MiB.
const stormHeap = 24 << 10 // KiB

// stormHeapWait is how long the heap may take to come back down.
const stormHeapWait = 10 * time.Second
