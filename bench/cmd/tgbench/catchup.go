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
//   - catchup_lone / catchup_slow: the shell's pace (the throughput
//     command, read by one SSH client) alone, then with a WebSocket client
//     attached that reads at slowPace; the ratio is what the slow reader
//     costs the shell (issue 23: at least 0.95). The slow client must stay
//     attached and be brought forward (skipped events) in every run.
//   - skip_cost: in process, what one skip costs the session: the screen
//     Replayer's Prepare (outside the session's lock) and Replay (the
//     redraw, under it: the pump waits for it) at 80x24, 200x60 and the
//     largest window (sessions.MaxDim square), each with a full
//     scrollback and 64 KiB of output waiting for the emulator.

// slowPace is the slow reader's pace, in bytes per second.
const slowPace = 100_000

var catchupMetrics = []string{"catchup_lone", "catchup_slow"}

const catchupPath = "ssh + 100 KB/s reader"

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
	timeout := runTimeout(cfg.bytes)
	cmd := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", cfg.bytes)
	var lone, slow []float64
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var rates []float64
		if rates, err = fanoutRun(clients, cmd, timeout, cfg.bytes); err != nil {
			err = fmt.Errorf("alone, run %d: %w", r+1, cause(ctx, err))
			break
		}
		lone = append(lone, rates[0])
	}
	var sr *slowReader
	if err == nil {
		sr, err = dialSlow(ctx, e, e.instance(0))
	}
	if sr != nil {
		defer sr.Close()
	}
	started := time.Now()
	for r := 0; r < runs && err == nil && ctx.Err() == nil; r++ {
		var rates []float64
		if rates, err = fanoutRun(clients, cmd, timeout, cfg.bytes); err != nil {
			err = fmt.Errorf("with the slow reader, run %d: %w", r+1, cause(ctx, err))
			break
		}
		err = sr.alive()
		slow = append(slow, rates[0])
	}
	// The skipped event reaches the reader once it has read what was in
	// flight (a frame and the socket buffers, at 100 KB/s): wait for it,
	// bounded. 32 MB (the default -bytes) is more than the gateway's 16 MiB
	// client queue and those buffers, so each run puts it behind.
	if err == nil && cfg.bytes > 24<<20 {
		err = sr.waitSkip(ctx, 45*time.Second)
	}
	if err == nil {
		err = sr.alive()
	}
	if err != nil {
		failAll(err)
		return
	}
	firstSkip := sr.first.Load().Sub(started).Round(100 * time.Millisecond)
	rep.addSamples(ctx, "catchup_lone", catchupPath, median(lone), lone, runs, "one SSH client alone on the session (the shell's pace); compared with direct throughput")
	rep.addSamples(ctx, "catchup_slow", catchupPath, median(slow), slow, runs,
		fmt.Sprintf("the same with a WebSocket client reading at 100 KB/s attached; compared with catchup_lone (issue 23: >= 0.95); it stayed attached and was brought forward %d times (the first event %s after the first run began), %s skipped in all",
			sr.skips.Load(), firstSkip, sessions.SizeString(sr.skipped.Load())))
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
	if s.skips.Load() > 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.skip:
		return nil
	case <-s.done:
		return s.alive()
	case <-t.C:
		return fmt.Errorf("the slow reader got no skipped event within %s of the runs' end", d)
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

func (s *slowReader) Close() {
	_ = s.c.Close()
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
