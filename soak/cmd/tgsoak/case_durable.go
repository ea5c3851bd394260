package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/gatewayproc"
)

// seqLine is one line of the durable cases' counter; the counter itself
// is started as a command, whose echo ("seq-$i") never matches.
var seqLine = regexp.MustCompile(`seq-([0-9]+)\r\n`)

// counterCmd prints seq-1, seq-2, ... every 20 ms in the background.
const counterCmd = `( i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); echo "seq-$i"; usleep 20000; done ) &`

// recorder reads a WebSocket client until its connection ends, keeping
// every output byte (the durable cases check them line by line).
type recorder struct {
	t      *wsTerm
	mu     sync.Mutex
	out    bytes.Buffer
	events []wsEvent // the client's events so far
	done   chan struct{}
	err    error
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
			rc.events = append(rc.events[:0], t.events...)
			rc.mu.Unlock()
			if err != nil {
				rc.err = err
				return
			}
		}
	}()
	return rc
}

// waitEvent waits up to d for an event of type typ after the first n.
func (rc *recorder) waitEvent(typ string, n int, d time.Duration) (wsEvent, bool) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		rc.mu.Lock()
		evs := rc.events[min(n, len(rc.events)):]
		rc.mu.Unlock()
		for _, ev := range evs {
			if ev.Type == typ {
				return ev, true
			}
		}
	}
	return wsEvent{}, false
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

// durableStream is one streaming durable session of the durable cases.
type durableStream struct {
	inst    string
	session string
	before  []byte // output from byte 0 until the gateway went
	rec     *recorder
}

// durableGateway prepares a --durable --replay raw gateway. Raw replay: a
// new session's replay is then its output from byte 0 (while it fits the
// buffer), so the bytes a client read are the session's from 0, and it
// resumes from their count.
func (r *runner) durableGateway(name string) (*gateway, error) {
	return r.e.newGateway(name, r.e.main, "--durable", "--replay", "raw")
}

// startStreams attaches a WebSocket client to a new session in each
// container and starts the counter there.
func startStreams(ctx context.Context, g *gateway, names []string, res *result) ([]*durableStream, bool) {
	var streams []*durableStream
	for _, inst := range names {
		t, err := g.attachWS(ctx, inst)
		if !res.check(err, "attach") {
			return streams, false
		}
		ev := t.events[0]
		s := &durableStream{inst: inst, session: ev.Session, rec: record(t)}
		streams = append(streams, s)
		if !ev.New || ev.Offset > 32<<10 {
			res.failf("%s: attached %+v, want a new session", inst, ev)
			return streams, false
		}
		// Every byte from the attach on is recorded: the resume offset
		// is their count.
		if _, err := t.Write([]byte(counterCmd + "\n")); !res.check(err, "start the counter") {
			return streams, false
		}
	}
	return streams, true
}

// leaveStreams disconnects whatever clients are still attached.
func leaveStreams(streams []*durableStream) {
	for _, s := range streams {
		if s.rec != nil {
			_ = s.rec.t.Leave(closeRST)
			<-s.rec.done
			s.rec = nil
		}
	}
}

// cutStreams waits until every client's connection ended (the gateway
// went) and keeps what each read.
func cutStreams(streams []*durableStream, res *result) bool {
	for _, s := range streams {
		select {
		case <-s.rec.done:
		case <-time.After(15 * time.Second):
			res.failf("%s: the client is still connected 15 s after its gateway went", s.inst)
			return false
		}
		s.before, s.rec = s.rec.bytes(), nil
	}
	return true
}

// resumeStreams reattaches every client with session=ID&since=BYTES-READ
// and checks, after a while, that every counter line came exactly once.
func resumeStreams(ctx context.Context, g *gateway, streams []*durableStream, res *result) {
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
		n, err := checkSeq(append(bytes.Clone(s.before), s.rec.bytes()...))
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
}

// caseDurableKill streams a counter in DurableSessions durable sessions,
// kills the gateway with SIGKILL, restarts it on the same state directory
// and resumes every session: every client must land in its session with
// no gap, and every counter line must arrive exactly once.
func caseDurableKill(ctx context.Context, r *runner, res *result) {
	g, err := r.durableGateway("durable")
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
	streams, ok := startStreams(ctx, g, names, res)
	defer leaveStreams(streams)
	if !ok {
		return
	}
	time.Sleep(3 * time.Second)
	g.kill9()
	if !cutStreams(streams, res) {
		return
	}
	t0 := time.Now()
	if !res.check(g.start(ctx), "restart the gateway") {
		return
	}
	res.notef("restart after SIGKILL with %d streaming durable sessions: /healthz after %s", len(streams), time.Since(t0).Round(time.Millisecond))
	resumeStreams(ctx, g, streams, res)
	res.Shells = fmt.Sprintf("%d durable", len(streams))
}

// caseDurableUpgrade is an upgrade across holder builds: a gateway whose
// holder is another build (a gateway built here without an embedded
// holder, and beside it a holder built with another build string) holds
// streaming sessions; it stops with SIGTERM and the run's gateway starts
// on its state directory. It must adopt the older holders' sessions,
// resume every client exactly, and reset one of them.
func caseDurableUpgrade(ctx context.Context, r *runner, res *result) {
	prev, err := buildPrevious(ctx, filepath.Join(r.e.dir, "previous"))
	if !res.check(err, "build the previous gateway and holder") {
		return
	}
	g, err := r.durableGateway("upgrade")
	if !res.check(err, "prepare a gateway") {
		return
	}
	defer g.kill9()
	g.bin = prev
	if !res.check(g.start(ctx), "start the gateway with the previous holder") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "upgrade", max(1, r.cfg.DurableSessions/2))
	if !res.check(err, "start containers") {
		return
	}
	streams, ok := startStreams(ctx, g, names, res)
	defer leaveStreams(streams)
	if !ok {
		return
	}
	time.Sleep(2 * time.Second)
	if _, err := g.sigterm(); !res.check(err, "SIGTERM") {
		return
	}
	if !cutStreams(streams, res) {
		return
	}
	g.bin = "" // the run's gateway, with its holder
	t0 := time.Now()
	if !res.check(g.start(ctx), "start this build's gateway") {
		return
	}
	res.notef("this build's gateway answered /healthz %s after the previous one's SIGTERM", time.Since(t0).Round(time.Millisecond))
	resumeStreams(ctx, g, streams, res)
	// Both builds' binaries are in the instance now: the attach brought
	// this build's next to the older one that still holds the session.
	dctx, dcancel := context.WithTimeout(ctx, dockerWait)
	bins, err := r.e.main.docker(dctx, "exec", streams[0].inst, "sh", "-c", "ls -d /*/.termgate/holder-* /.termgate/holder-* 2>/dev/null; true")
	dcancel()
	if n := strings.Count(strings.TrimSpace(bins), "\n") + 1; err != nil || n < 2 {
		res.failf("%s: want the holder binaries of both builds, found %q (%v)", streams[0].inst, bins, err)
	}
	// The older holder still takes a reset from this build.
	inst := streams[0].inst
	status, body, err := g.request(ctx, http.MethodPost, "/api/instances/"+inst+"/terminal/reset")
	if res.check(err, "reset") && status != http.StatusOK {
		res.failf("reset of %s through this build: %d %s", inst, status, strings.TrimSpace(string(body)))
	}
	if ev, ok := streams[0].rec.waitEvent("reset", 1, 20*time.Second); !ok || ev.Session == streams[0].session {
		res.failf("%s: the reset through this build: no reset event into a new session within 20 s (%+v)", inst, ev)
	}
	res.Shells = fmt.Sprintf("%d durable", len(streams))
}

// buildPrevious builds, into dir, a gateway that embeds no holder and
// beside it (where such a gateway looks) a holder whose build string
// differs from any other build's, and returns the gateway's path.
func buildPrevious(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	gw := filepath.Join(dir, "termgate")
	if err := gatewayproc.Build(ctx, gw); err != nil {
		return "", err
	}
	mod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -X main.build=soak-previous",
		"-o", filepath.Join(dir, "termgate-holder"), "./cmd/termgate-holder")
	build.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: it runs in busybox
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/termgate-holder: %w\n%s", err, out)
	}
	return gw, nil
}
