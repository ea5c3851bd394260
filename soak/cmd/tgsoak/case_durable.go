package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// seqLine is one line of the durable cases' counter; the counter itself
// is started as a command, whose echo ("seq-$i") never matches.
var seqLine = regexp.MustCompile(`seq-([0-9]+)\r\n`)

// counterCmd prints seq-1, seq-2, ... every 20 ms in the background.
const counterCmd = `( i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); echo "seq-$i"; usleep 20000; done ) &`

// recorder reads a WebSocket client until its connection ends, keeping
// every output byte (the durable cases check them line by line).
type recorder struct {
	t    *wsTerm
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func record(t *wsTerm) *recorder {
	rc := &recorder{t: t, done: make(chan struct{})}
	go func() {
		defer close(rc.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := t.Read(buf)
			rc.mu.Lock()
			rc.out.Write(buf[:n])
			rc.mu.Unlock()
			if err != nil {
				rc.err = err
				return
			}
		}
	}()
	return rc
}

func (rc *recorder) bytes() []byte {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return bytes.Clone(rc.out.Bytes())
}

// attachResume attaches over WebSocket resuming session from byte since,
// and returns the client with its attached event.
func (g *gateway) attachResume(ctx context.Context, instance, session string, since int64) (*wsTerm, wsEvent, error) {
	u, err := url.Parse(g.wsURL(instance))
	if err != nil {
		return nil, wsEvent{}, err
	}
	q := u.Query()
	q.Set("session", session)
	q.Set("since", strconv.FormatInt(since, 10))
	u.RawQuery = q.Encode()
	d := websocket.Dialer{HandshakeTimeout: dialTimeout, ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10}
	c, resp, err := d.DialContext(ctx, u.String(), http.Header{"Authorization": {"Bearer " + g.e.token}})
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, wsEvent{}, fmt.Errorf("websocket %s: %s %s", instance, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil, wsEvent{}, fmt.Errorf("websocket %s: %w", instance, err)
	}
	t := &wsTerm{c: c}
	_ = c.SetReadDeadline(time.Now().Add(dialTimeout))
	ev, err := t.nextEvent()
	_ = c.SetReadDeadline(time.Time{})
	if err != nil || ev.Type != "attached" {
		c.Close()
		return nil, ev, fmt.Errorf("websocket %s: first event %+v (%v), want attached", instance, ev, err)
	}
	return t, ev, nil
}

// checkSeq checks that out holds seq-1 ... seq-N in order, none lost or
// repeated, and returns N.
func checkSeq(out []byte) (int, error) {
	want := 1
	for _, m := range seqLine.FindAllSubmatch(out, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		if n != want {
			return want - 1, fmt.Errorf("line seq-%d where seq-%d was due", n, want)
		}
		want++
	}
	if want == 1 {
		return 0, fmt.Errorf("no counter line at all")
	}
	return want - 1, nil
}

// durableStream is one streaming durable session of caseDurableKill.
type durableStream struct {
	inst    string
	session string
	before  []byte // output from byte 0 until the gateway died
	rec     *recorder
}

// caseDurableKill streams a counter in DurableSessions durable sessions,
// kills the gateway with SIGKILL, restarts it on the same state directory
// and resumes every session with session=ID&since=N: every client must
// land in its session with no gap, and every counter line must arrive
// exactly once across the restart.
func caseDurableKill(ctx context.Context, r *runner, res *result) {
	// Raw replay: a new session's replay is then its output from byte 0
	// (while it fits the buffer), so the bytes a client read are the
	// session's from 0 and resume from their count.
	g, err := r.e.newGateway("durable", r.e.main, "--durable", "--replay", "raw")
	if !res.check(err, "prepare a gateway") {
		return
	}
	defer g.kill9()
	if !res.check(g.start(ctx), "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "held", r.cfg.DurableSessions)
	if !res.check(err, "start containers") {
		return
	}
	streams := make([]*durableStream, len(names))
	defer func() {
		for _, s := range streams {
			if s != nil && s.rec != nil {
				_ = s.rec.t.Leave(closeRST)
				<-s.rec.done
			}
		}
	}()
	for i, inst := range names {
		t, err := g.attachWS(ctx, inst)
		if !res.check(err, "attach") {
			return
		}
		ev := t.events[0]
		s := &durableStream{inst: inst, session: ev.Session}
		streams[i] = s
		if !ev.New || ev.Offset > 32<<10 {
			_ = t.Leave(closeRST)
			res.failf("%s: attached %+v, want a new session", inst, ev)
			return
		}
		// Every byte from the attach on is recorded: the resume offset
		// is their count.
		s.rec = record(t)
		if _, err := t.Write([]byte(counterCmd + "\n")); !res.check(err, "start the counter") {
			return
		}
	}
	time.Sleep(3 * time.Second)
	g.kill9()
	for _, s := range streams {
		select {
		case <-s.rec.done:
		case <-time.After(15 * time.Second):
			res.failf("%s: the client is still connected 15 s after the gateway's SIGKILL", s.inst)
			return
		}
		s.before, s.rec = s.rec.bytes(), nil
	}
	t0 := time.Now()
	if !res.check(g.start(ctx), "restart the gateway") {
		return
	}
	res.notef("restart after SIGKILL with %d streaming durable sessions: /healthz after %s", len(streams), time.Since(t0).Round(time.Millisecond))
	for _, s := range streams {
		t, ev, err := g.attachResume(ctx, s.inst, s.session, int64(len(s.before)))
		if !res.check(err, "resume") {
			return
		}
		s.rec = record(t)
		if ev.Session != s.session || ev.Gap {
			res.failf("%s: resumed into %+v, want session %s with no gap", s.inst, ev, s.session)
		}
	}
	time.Sleep(2 * time.Second)
	lines, fewest := 0, -1
	for _, s := range streams {
		after := s.rec.bytes()
		n, err := checkSeq(append(bytes.Clone(s.before), after...))
		if err != nil {
			res.failf("%s: across the restart: %v", s.inst, err)
			continue
		}
		before, _ := checkSeq(s.before)
		if n <= before {
			res.failf("%s: no counter line after the restart (last seq-%d)", s.inst, n)
		}
		lines += n
		if fewest < 0 || n-before < fewest {
			fewest = n - before
		}
	}
	res.notef("%d counter lines over %d sessions, each exactly once across the restart (at least %d after it per session)", lines, len(streams), fewest)
	res.Shells = fmt.Sprintf("%d durable", len(streams))
}
