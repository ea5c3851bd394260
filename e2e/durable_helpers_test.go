package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Helpers for the durable-session scenarios (issue 7): gateways that are
// killed, restarted and doubled over one state directory, containers of
// other kinds, and the resume arithmetic of a WebSocket client.

var (
	holderOnce sync.Once
	holderErr  error
)

// needHolder makes the holder program available to the gateway under test:
// a binary built by `make build` embeds it, the one TestMain builds with
// `go build` finds it as termgate-holder next to itself. The holder must be
// static (it runs in busybox and distroless images), hence CGO_ENABLED=0.
func needHolder(t *testing.T) {
	t.Helper()
	needDocker(t)
	if os.Getenv("TERMGATE_E2E_BINARY") != "" {
		return // a binary built elsewhere: make build embeds the holder
	}
	holderOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			holderErr = err
			return
		}
		holderErr = buildStatic(root, filepath.Join(filepath.Dir(gatewayBin), "termgate-holder"), "./cmd/termgate-holder")
	})
	if holderErr != nil {
		t.Fatal(holderErr)
	}
}

// buildStatic builds the program pkg of the module at root into out,
// static (CGO_ENABLED=0): it runs in busybox and distroless images.
func buildStatic(root, out, pkg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	return nil
}

// durableGateway starts containers and a --durable gateway for them. Durable
// shells outlive every gateway, so the containers are removed before the
// fixture's cleanup (which would otherwise find the shells that a SIGTERM
// rightly left running) and every earlier run's log is kept for a failure.
func durableGateway(t *testing.T, o options) *durableGW {
	t.Helper()
	needHolder(t)
	o.args = append([]string{"--durable"}, o.args...)
	if o.idleTimeout == 0 {
		o.idleTimeout = 10 * time.Minute
	}
	d := &durableGW{gateway: newGateway(t, o), idle: o.idleTimeout}
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range d.earlier {
				t.Logf("gateway log, run %d:\n%s", i+1, l)
			}
		}
		d.removeContainers(t)
	})
	return d
}

// durableGW is a gateway fixture that can be killed and restarted over the
// same state directory.
type durableGW struct {
	*gateway
	idle    time.Duration
	earlier []string // logs of the runs before the current one
}

// kill9 kills the gateway with SIGKILL (a crash: it can tell nobody) and
// waits for it to be gone.
func (d *durableGW) kill9(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	d.stopped = true // nothing for the fixture's SIGTERM to stop
	d.mu.Unlock()
	d.proc.Kill()
}

// sigterm stops the gateway with SIGTERM, checks that it exits in time and
// cleanly, and returns how long it took.
func (d *durableGW) sigterm(t *testing.T) time.Duration {
	t.Helper()
	return d.stop(t)
}

// restart starts the gateway again with the same state directory, flags and
// containers (new ports: clients must dial again).
func (d *durableGW) restart(t *testing.T) {
	t.Helper()
	d.earlier = append(d.earlier, d.logs.String())
	d.mu.Lock()
	d.stopped = false
	d.mu.Unlock()
	d.start(t, d.idle)
}

// twin starts a second gateway process on the same state directory
// (host key, authorized keys, tokens, cookie key), flags and instances, on
// ports of its own. It owns no container; the test's end stops it.
func (d *durableGW) twin(t *testing.T) *gateway {
	t.Helper()
	g := &gateway{
		t: t, stateDir: d.stateDir, prefix: d.prefix, label: d.label,
		signers: d.signers, keyFiles: d.keyFiles, tokens: d.tokens,
		http: d.http, extraArgs: d.extraArgs,
	}
	t.Cleanup(g.cleanup)
	g.start(t, d.idle)
	return g
}

// removeContainers removes the fixture's containers (and the shells the
// durable sessions left in them) and forgets them.
func (d *durableGW) removeContainers(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	names := d.containers
	d.containers = nil
	d.mu.Unlock()
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	// The engine's vfs storage driver sometimes fails a removal with
	// "directory not empty" on a busy machine; a second try succeeds.
	var err error
	for try := 0; try < 3; try++ {
		if _, err = docker(ctx, append([]string{"rm", "-f"}, names...)...); err == nil {
			return
		}
		time.Sleep(time.Second)
	}
	t.Errorf("remove containers: %v", err)
}

// runContainer starts a container of image with extra `docker run` flags
// (before the image), carrying the gateway's labels; the fixture removes it.
func (d *durableGW) runContainer(t *testing.T, suffix, image string, extra ...string) string {
	t.Helper()
	name := d.name(suffix)
	d.mu.Lock()
	d.containers = append(d.containers, name)
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	args := append([]string{"run", "-d", "--init", "--network", "none",
		"--label", "tge2e", "--label", d.label, "--name", name}, extra...)
	if _, err := docker(ctx, append(args, image)...); err != nil {
		t.Fatal(err)
	}
	return name
}

// durableInfo is the part of a GET /api/sessions element these tests read
// beyond sessionInfo: whether the session is held in its instance.
type durableInfo struct {
	Instance string `json:"instance"`
	Session  string `json:"session"`
	Clients  int    `json:"clients"`
	Durable  *bool  `json:"durable"`
}

// durableSession returns the instance's session as g's admin token sees it.
func durableSession(t *testing.T, g *gateway, instance string) (durableInfo, bool) {
	t.Helper()
	status, body := g.request(t, http.MethodGet, "/api/sessions", tokAdmin, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /api/sessions: %d %s", status, body)
	}
	var all []durableInfo
	if err := json.Unmarshal(body, &all); err != nil {
		t.Fatalf("GET /api/sessions: %v in %s", err, body)
	}
	for _, s := range all {
		if s.Instance == instance {
			return s, true
		}
	}
	return durableInfo{}, false
}

// expectDurable checks what GET /api/sessions says of the instance's session:
// that it is session id (unless id is "") and whether it is durable.
func expectDurable(t *testing.T, g *gateway, instance, id string, durable bool) {
	t.Helper()
	s, ok := durableSession(t, g, instance)
	switch {
	case !ok:
		t.Errorf("GET /api/sessions lists no session of %s", instance)
	case id != "" && s.Session != id:
		t.Errorf("GET /api/sessions: %s is in session %s, want %s", instance, s.Session, id)
	case s.Durable == nil:
		t.Errorf("GET /api/sessions: the session of %s has no \"durable\" field, want %v", instance, durable)
	case *s.Durable != durable:
		t.Errorf("GET /api/sessions: the session of %s says \"durable\": %v, want %v", instance, *s.Durable, durable)
	}
}

// resumeFrom is the offset a WebSocket client resumes from after it lost its
// connection: the offset of the byte after the last one it received (the
// attached event's offset, plus what it received, minus the replay that
// preceded the offset). The replay count is the gateway's "replay" field.
func resumeFrom(t *testing.T, w *wsClient) int64 {
	t.Helper()
	var ev struct {
		Offset int64 `json:"offset"`
		Replay *int  `json:"replay"`
	}
	if err := json.Unmarshal([]byte(w.attached.raw), &ev); err != nil || ev.Replay == nil {
		t.Fatalf("the attached event %s has no replay count to resume with", w.attached.raw)
	}
	return ev.Offset + int64(len(w.out.Bytes())) - int64(*ev.Replay)
}

// numbered is a loop the shell runs: n lines "N00001N" .. and an end word.
// The printf format in the echoed command line never matches numberedLine.
func numbered(n int, pause string) (cmd, end string) {
	tag := tags.Add(1)
	return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do i=$((i+1)); printf 'N%%05dN\n' $i; sleep %s; done; echo END%d-$((40+2))`, n, pause, tag),
		fmt.Sprintf("END%d-42", tag)
}

var numberedLine = regexp.MustCompile(`N(\d{5})N\r\n`)

// checkNumbered checks that out holds lines of numbered up to n, each once
// and in order (the first ones are missing when the client attached after
// they were printed or the replay no longer held them).
func checkNumbered(t *testing.T, out []byte, n int) {
	t.Helper()
	all := numberedLine.FindAllSubmatch(out, -1)
	if len(all) == 0 {
		t.Fatalf("no numbered line in the output %q", out[max(0, len(out)-400):])
	}
	first, _ := strconv.Atoi(string(all[0][1]))
	for i, m := range all {
		got, _ := strconv.Atoi(string(m[1]))
		if got != first+i {
			at := numberedLine.FindAllIndex(out, -1)[i][0]
			t.Fatalf("numbered line %d of the output is %d, want %d (a byte lost or doubled): around it %q",
				i, got, first+i, out[max(0, at-120):min(len(out), at+120)])
		}
	}
	if last, _ := strconv.Atoi(string(all[len(all)-1][1])); last != n {
		t.Errorf("the last numbered line is %d, want %d", last, n)
	}
}

// shellAlive reports whether the container still runs the process pid
// (zombies left out).
func shellAlive(t *testing.T, name string, pid int) bool {
	t.Helper()
	return len(findProcesses(t, name, pid)) > 0
}

// expectJob checks that the container runs a process with args in its
// command line.
func expectJob(t *testing.T, name, args string) {
	t.Helper()
	if len(findProcesses(t, name, -1, args)) == 0 {
		t.Errorf("%s no longer runs %q: %v", name, args, processes(t, name))
	}
}

// anyNotice returns the SSH client's stderr and unread stdout, for checking
// a [termgate] notice wherever the gateway wrote it.
func anyNotice(tm *term) string {
	return tm.errOut.String() + tm.out.String()[tm.seen:]
}
