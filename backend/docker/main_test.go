package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"go.uber.org/goleak"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// These tests run against the real engine (DOCKER_HOST or the default
// socket) with the image built by scripts/test-image.sh. Without an engine
// they skip, unless TERMGATE_REQUIRE_DOCKER=1.

const testImage = "termgate-test:busybox"

var (
	engineErr error // set when the engine or the test image is unusable
	runLabel  string
)

func TestMain(m *testing.M) {
	// The tests wait on the engine and their containers far more than
	// they compute: four at a time, not GOMAXPROCS (two on two cores).
	termtest.ParallelAtLeast(4)
	runLabel = "termgate.test=" + randomHex(6)
	engineErr = prepareEngine()
	cleanup := func() {}
	if engineErr == nil {
		cleanup, engineErr = buildHolder() // holder_test.go
	}
	goleak.VerifyTestMain(runThen{m, cleanup})
}

// runThen runs the tests, then cleanup (VerifyTestMain exits the process).
type runThen struct {
	m       *testing.M
	cleanup func()
}

func (r runThen) Run() int {
	defer r.cleanup()
	return r.m.Run()
}

func prepareEngine() error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		return err
	}
	out, err := exec.Command("bash", "../../scripts/test-image.sh").CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/test-image.sh: %w: %s", err, out)
	}
	return nil
}

func needEngine(t *testing.T) {
	t.Helper()
	if engineErr == nil {
		return
	}
	if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
		t.Fatalf("TERMGATE_REQUIRE_DOCKER=1 but the Docker engine or the test image is unusable: %v", engineErr)
	}
	t.Skipf("no usable Docker engine (set TERMGATE_REQUIRE_DOCKER=1 to fail instead): %v", engineErr)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// runContainer starts a test container (removed at cleanup) and returns its
// name and ID. extra goes before the image (e.g. --label).
func runContainer(t *testing.T, extra ...string) (name, id string) {
	t.Helper()
	name = "tgtest-" + randomHex(6)
	args := append([]string{"run", "-d", "--init", "--network", "none", "--name", name}, extra...)
	id = dockerCLI(t, append(args, testImage)...)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name, id
}

// proc is one line of `ps -o pid,sid,stat,args` in a container.
type proc struct {
	PID, SID int
	Stat     string
	Args     string
}

func procs(t *testing.T, container string) []proc {
	t.Helper()
	var ps []proc
	for line := range strings.Lines(dockerCLI(t, "exec", container, "ps", "-o", "pid,sid,stat,args")) {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		sid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			continue
		}
		ps = append(ps, proc{PID: pid, SID: sid, Stat: f[2], Args: strings.Join(f[3:], " ")})
	}
	return ps
}

// live returns the non-zombie processes of container matching keep.
func live(t *testing.T, container string, keep func(proc) bool) []proc {
	t.Helper()
	var out []proc
	for _, p := range procs(t, container) {
		if !strings.HasPrefix(p.Stat, "Z") && keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// term reads a Process into a buffer on its own goroutine, which ends when
// Read fails (after Kill, close or the shell's exit).
type term struct {
	p       sessions.Process
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
	done    chan struct{}
	err     error
}

func startTerm(t *testing.T, p sessions.Process) *term {
	tm := &term{p: p, changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		b := make([]byte, 4096)
		for {
			n, err := p.Read(b)
			tm.mu.Lock()
			tm.buf.Write(b[:n])
			if err != nil {
				tm.err = err
			}
			tm.mu.Unlock()
			select {
			case tm.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Kill(ctx)
		<-tm.done
	})
	return tm
}

func (tm *term) write(t *testing.T, s string) {
	t.Helper()
	if _, err := tm.p.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

func (tm *term) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.buf.String()
}

// expect waits until the output matches re and returns the submatches of
// the last match.
func (tm *term) expect(t *testing.T, re string, d time.Duration) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		if m := rx.FindAllStringSubmatch(tm.output(), -1); m != nil {
			return m[len(m)-1]
		}
		select {
		case <-tm.changed:
		case <-tm.done:
			if m := rx.FindAllStringSubmatch(tm.output(), -1); m != nil {
				return m[len(m)-1]
			}
			t.Fatalf("stream ended (%v) before %q; output:\n%q", tm.err, re, tm.output())
		case <-deadline.C:
			t.Fatalf("no %q after %v; output:\n%q", re, d, tm.output())
		}
	}
}

// waitEOF waits for the reader goroutine to end and checks it saw io.EOF.
func (tm *term) waitEOF(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-tm.done:
	case <-time.After(d):
		t.Fatalf("no end of stream after %v", d)
	}
	if tm.err == nil || !errors.Is(tm.err, io.EOF) {
		t.Fatalf("stream ended with %v, want io.EOF", tm.err)
	}
}

// waitEnd waits for the reader goroutine to end and returns the error
// Read ended with.
func (tm *term) waitEnd(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-tm.done:
	case <-time.After(d):
		t.Fatalf("no end of stream after %v", d)
	}
	return tm.err
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startShell looks up name and starts a shell in it.
func startShell(t *testing.T, b *Backend, name string, size sessions.Size) (*term, sessions.Instance, string) {
	t.Helper()
	ctx := testContext(t)
	inst, err := b.Lookup(ctx, name)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", name, err)
	}
	sid := randomHex(8)
	p, err := b.Start(ctx, inst, sessions.StartSpec{SessionID: sid, Term: "xterm", Size: size})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return startTerm(t, p), inst, sid
}

// shellPID asks the shell for its PID.
func shellPID(t *testing.T, tm *term) int {
	t.Helper()
	tm.write(t, "echo PID=$$.\n")
	pid, _ := strconv.Atoi(tm.expect(t, `PID=(\d+)\.`, 10*time.Second)[1])
	return pid
}
