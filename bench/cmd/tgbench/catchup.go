package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/ring"
	"github.com/termgate/termgate/screen"
	"github.com/termgate/termgate/sessions"
)

// Catching up (issue 23 item 2, contract session semantics 8): with
// --replay screen a client that falls behind is brought forward instead
// of being dropped. Two measurements:
//
//   - catchup_lone / catchup_slow / catchup_mem: the shell printing at
//     catchupPace (the paced fan-out's command) read by one SSH client,
//     alone, then with -slow-readers clients attached that read at
//     slowPace: the shell's own pace (issue 23: at least 0.95 of alone)
//     and the gateway's memory growth (bounded by their queues). The slow
//     clients must stay attached and be brought forward.
//   - skip_cost: in process, what one skip costs the session: the screen
//     Replayer's Prepare (outside the session's lock) and Replay (the
//     redraw, under it: the pump waits for it) at 80x24, 200x60 and the
//     largest window (sessions.MaxDim square), each with a full
//     scrollback and 64 KiB of output waiting for the emulator.

// slowPace is the slow readers' pace, in bytes per second.
const slowPace = 100_000

// maxSlowWS is how many slow readers use WebSocket; the rest use SSH (the
// gateway holds at most 64 HTTP connections per address).
const maxSlowWS = 40

var catchupMetrics = []string{"catchup_lone", "catchup_slow", "catchup_mem"}

const catchupPath = "5 MB/s shell, 100 KB/s readers"

// catchupPace is the shell's pace; it prints for -fanout-pace-for in each
// run (5 s: 25 MB, more than a client's queue, 16 MiB, and its socket
// buffers).
const catchupPace = 5_000_000

// reader is a client reading at slowPace.
type reader interface {
	skipsSeen() int64
	alive() error
	waitSkip(ctx context.Context, d time.Duration) error
	Close()
}

func catchup(ctx context.Context, e *env, cfg *config, rep *Report) {
	failAll := func(err error) {
		for _, m := range catchupMetrics {
			rep.fail(m, catchupPath, err)
		}
	}
	clients, err := openFanout(ctx, e, 0, 1) // one SSH client on the first session
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if err != nil {
		failAll(err)
		return
	}
	runs := min(cfg.runs, 3)
	// The shell prints at catchupPace (paced fan-out's command), and its
	// own clock (busybox ts stamps) gives its pace.
	pcfg := *cfg
	pcfg.pace = catchupPace // for -fanout-pace-for (5 s: 25 MB)
	run := func() (float64, error) {
		res, err := pacedRun(e, &pcfg, clients)
		return res.shell / 1e3, err // MB/s
	}
	var lone, slow []float64
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var pace float64
		if pace, err = run(); err != nil {
			err = fmt.Errorf("alone, run %d: %w", r+1, cause(ctx, err))
			break
		}
		lone = append(lone, pace)
	}
	pid := e.gw.PID()
	rss0, rerr := procRSS(pid)
	if err == nil {
		err = rerr
	}
	var readers []reader
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	var ws *slowReader // the first WebSocket one: its skipped events are counted
	for i := 0; i < cfg.slowReaders && err == nil; i++ {
		var r reader
		if i < maxSlowWS {
			var w *slowReader
			if w, err = dialSlow(ctx, e, e.instance(0)); err == nil {
				r = w
				if ws == nil {
					ws = w
				}
			}
		} else {
			r, err = dialSlowSSH(ctx, e, e.instance(0), perKey+i-maxSlowWS)
		}
		if err != nil {
			err = fmt.Errorf("slow reader %d: %w", i+1, err)
			break
		}
		readers = append(readers, r)
	}
	started := time.Now()
	var peak int64
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var pace float64
		if pace, err = run(); err != nil {
			err = fmt.Errorf("with the slow readers, run %d: %w", r+1, cause(ctx, err))
			break
		}
		if rss, rerr := procRSS(pid); rerr == nil {
			peak = max(peak, rss)
		}
		for i, rd := range readers {
			if err == nil {
				if err = rd.alive(); err != nil {
					err = fmt.Errorf("slow reader %d: %w", i+1, err)
				}
			}
		}
		slow = append(slow, pace)
	}
	// A skip reaches a reader once it has read what was in flight (a
	// frame and the socket buffers, at 100 KB/s): wait for it, bounded.
	// A run of 5 s prints 25 MB, more than the gateway's 16 MiB client
	// queue and those buffers, so each run puts the readers behind (a
	// shorter one, as in the short test, may not).
	behind := int64(catchupPace)*int64(pcfg.paceFor/time.Millisecond)/1000 > 20_000_000
	for i, rd := range readers {
		if err == nil && behind {
			if err = rd.waitSkip(ctx, 45*time.Second); err != nil {
				err = fmt.Errorf("slow reader %d: %w", i+1, err)
			}
		}
	}
	if err != nil {
		failAll(err)
		return
	}
	firstSkip := time.Duration(0)
	if t := ws.first.Load(); t != nil {
		firstSkip = t.Sub(started).Round(100 * time.Millisecond)
	}
	var skips int64
	for _, rd := range readers {
		skips += rd.skipsSeen()
	}
	n := len(readers)
	rep.addSamples(ctx, "catchup_lone", catchupPath, median(lone), lone, runs, fmt.Sprintf("the shell's own pace (busybox ts stamps), nominal %s/s for %s, one SSH client alone reading it", formatPace(catchupPace), pcfg.paceFor))
	rep.addSamples(ctx, "catchup_slow", catchupPath, median(slow), slow, runs,
		fmt.Sprintf("the same with %d clients reading at 100 KB/s attached (%d WebSocket, %d SSH); compared with catchup_lone (issue 23: >= 0.95); all stayed attached and were brought forward %d times in all (the first WebSocket one: first event %s after the first run began, %s skipped)",
			n, min(n, maxSlowWS), max(0, n-maxSlowWS), skips, firstSkip, sessions.SizeString(ws.skipped.Load())))
	rep.add("catchup_mem", catchupPath, float64(peak-rss0)/(1<<20), nil,
		fmt.Sprintf("gateway RSS growth with the %d slow readers attached, peak at the runs' ends (%d MiB before); the bound is their queues, %d x 16 MiB", n, rss0>>20, n), nil)
}

// slowReader is a WebSocket client that reads its connection at slowPace
// (its socket's receive buffer small, so the gateway feels it) and counts
// the skipped events it gets. Close stops it and waits for it.
type slowReader struct {
	c       *websocket.Conn
	skips   atomic.Int64
	skipped atomic.Int64
	first   atomic.Pointer[time.Time] // when the first skipped event came
	skip    chan struct{}             // gets a value at each skipped event
	mu      sync.Mutex
	err     error // why it stopped, once it did
	done    chan struct{}
}

// waitSkip waits, up to d, until the reader was brought forward once.
func (s *slowReader) waitSkip(ctx context.Context, d time.Duration) error {
	return waitSkipped(ctx, d, &s.skips, s.skip, s.done, s.alive, "the slow reader got no skipped event")
}

// waitSkipped waits, up to d, until a reader counted a skip (skips, or a
// value on skip), or it stopped (done: alive says why).
func waitSkipped(ctx context.Context, d time.Duration, skips *atomic.Int64, skip, done <-chan struct{}, alive func() error, none string) error {
	if skips.Load() > 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-skip:
		return nil
	case <-done:
		return alive()
	case <-t.C:
		return fmt.Errorf("%s within %s of the runs' end", none, d)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func dialSlow(ctx context.Context, e *env, instance string) (*slowReader, error) {
	u := url.URL{Scheme: "ws", Host: e.webAddr, Path: "/api/instances/" + instance + "/terminal",
		RawQuery: fmt.Sprintf("cols=%d&rows=%d", benchCols, benchRows)}
	d := websocket.Dialer{
		HandshakeTimeout: dialTimeout,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(64 << 10) // no autotuning: the pace reaches the gateway
			}
			return c, err
		},
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, resp, err := d.DialContext(dctx, u.String(), http.Header{"Authorization": {"Bearer " + e.token}})
	if err != nil {
		if resp != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("slow reader: websocket %s: %s", u.Path, resp.Status)
		}
		return nil, fmt.Errorf("slow reader: websocket %s: %w", u.Path, err)
	}
	s := &slowReader{c: c, done: make(chan struct{}), skip: make(chan struct{}, 1)}
	go s.read()
	return s, nil
}

// read reads at slowPace until the connection ends.
func (s *slowReader) read() {
	defer close(s.done)
	start, n := time.Now(), 0
	buf := make([]byte, 4<<10)
	for {
		typ, r, err := s.c.NextReader()
		if err != nil {
			s.stop(err)
			return
		}
		if typ == websocket.TextMessage {
			var ev struct {
				Type    string
				Bytes   int64
				Message string
			}
			if err := json.NewDecoder(r).Decode(&ev); err == nil {
				switch ev.Type {
				case "skipped":
					now := time.Now()
					s.first.CompareAndSwap(nil, &now)
					s.skips.Add(1)
					s.skipped.Add(ev.Bytes)
					select {
					case s.skip <- struct{}{}:
					default:
					}
				case "error":
					s.stop(errors.New("error event: " + ev.Message))
					return
				}
			}
			continue
		}
		for {
			k, err := r.Read(buf)
			n += k
			if ahead := time.Duration(float64(n)/slowPace*float64(time.Second)) - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				s.stop(err)
				return
			}
		}
	}
}

func (s *slowReader) stop(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// alive reports why the slow reader's connection ended, or nil.
func (s *slowReader) alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return fmt.Errorf("the slow reader was disconnected: %w", s.err)
	}
	return nil
}

func (s *slowReader) skipsSeen() int64 { return s.skips.Load() }

func (s *slowReader) Close() {
	_ = s.c.Close()
	<-s.done
}

// sshSlow is an SSH client that reads its session's output at slowPace
// (its channel's window then fills, and the gateway's writes block) and
// counts the "[termgate] ... to catch up" notices in it.
type sshSlow struct {
	t     term
	skips atomic.Int64
	skip  chan struct{}
	mu    sync.Mutex
	err   error
	done  chan struct{}
}

func dialSlowSSH(ctx context.Context, e *env, instance string, key int) (*sshSlow, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	t, err := dialSSHAs(dctx, e, instance, key)
	if err != nil {
		return nil, err
	}
	s := &sshSlow{t: t, skip: make(chan struct{}, 1), done: make(chan struct{})}
	go s.read()
	return s, nil
}

const skipNotice = "to catch up; this is the current screen"

func (s *sshSlow) read() {
	defer close(s.done)
	start, n := time.Now(), 0
	buf := make([]byte, 4<<10)
	var tail []byte // the end of the previous read, for a notice split across reads
	for {
		k, err := s.t.Read(buf)
		n += k
		seen := append(tail, buf[:k]...)
		if c := strings.Count(string(seen), skipNotice); c > 0 {
			s.skips.Add(int64(c))
			select {
			case s.skip <- struct{}{}:
			default:
			}
			seen = nil
		}
		tail = append([]byte(nil), seen[max(0, len(seen)-len(skipNotice)):]...)
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		if ahead := time.Duration(float64(n)/slowPace*float64(time.Second)) - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
}

func (s *sshSlow) skipsSeen() int64 { return s.skips.Load() }

func (s *sshSlow) alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return fmt.Errorf("the slow SSH reader was disconnected: %w", s.err)
	}
	return nil
}

func (s *sshSlow) waitSkip(ctx context.Context, d time.Duration) error {
	return waitSkipped(ctx, d, &s.skips, s.skip, s.done, s.alive, "the slow SSH reader got no skip notice")
}

func (s *sshSlow) Close() {
	_ = s.t.Close()
	<-s.done
}

// skipSizes are the windows skip_cost is measured at.
var skipSizes = []sessions.Size{{Cols: 80, Rows: 24}, {Cols: 200, Rows: 60}, {Cols: sessions.MaxDim, Rows: sessions.MaxDim}}

// skipCost measures one skip's redraw, in process, at each of skipSizes.
func skipCost(ctx context.Context, rep *Report) {
	for _, size := range skipSizes {
		path := fmt.Sprintf("%dx%d", size.Cols, size.Rows)
		prepare, redraw, bytes, err := timeSkips(ctx, size, 10)
		if err != nil {
			rep.fail("skip_cost", path, err)
			continue
		}
		rep.addSamples(ctx, "skip_cost", path, median(redraw), redraw, len(redraw),
			fmt.Sprintf("the redraw under the session's lock (Replay: %s); before it, outside the lock, Prepare fed 64 KiB to the emulator in %.2f ms (median); default 64 KiB scrollback, full",
				sessions.SizeString(int64(bytes)), median(prepare)))
	}
}

// timeSkips fills a screen Replayer of the given size (colourful lines,
// a full scrollback), then n times queues 64 KiB more and times Prepare
// and Replay, in ms; it returns the last redraw's size.
func timeSkips(ctx context.Context, size sessions.Size, n int) (prepare, redraw []float64, bytes int, err error) {
	rg := ring.New(64 << 10)
	r := screen.NewReplayerFunc(screen.Options{})(rg, func([]byte) {})
	defer r.Close()
	r.Attached(1) // a client is attached: the emulator is fed lazily, as in a session
	r.Resize(size)
	line := 0
	write := func(total int) {
		var b strings.Builder
		for b.Len() < total {
			fmt.Fprintf(&b, "\x1b[3%dm%06d \x1b[1m%s\x1b[m\r\n", line%8, line, strings.Repeat("ab cd ", max(1, (size.Cols-8)/6)))
			line++
		}
		chunk := []byte(b.String())
		rg.Write(chunk)
		r.Write(chunk)
	}
	write(max(256<<10, 2*size.Rows*(size.Cols+16))) // scrollback and screen full
	r.Replay()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		write(64 << 10)
		t0 := time.Now()
		r.(sessions.Redrawer).Prepare()
		t1 := time.Now()
		snap := r.Replay()
		t2 := time.Now()
		prepare = append(prepare, float64(t1.Sub(t0).Microseconds())/1000)
		redraw = append(redraw, float64(t2.Sub(t1).Microseconds())/1000)
		bytes = len(snap)
	}
	return prepare, redraw, bytes, ctx.Err()
}
