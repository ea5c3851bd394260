package docker

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/termgate/termgate/sessions"
)

// watch runs b.Watch until the test ends and returns the instances it
// reports gone.
func watch(t *testing.T, b *Backend) <-chan sessions.Instance {
	t.Helper()
	gone, _ := watchAll(t, b)
	return gone
}

// watchAll is watch that also returns the Reachable events.
func watchAll(t *testing.T, b *Backend) (<-chan sessions.Instance, <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan sessions.Instance, 64)
	reachable := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() {
		done <- b.Watch(ctx, func(ev sessions.InstanceEvent) {
			switch {
			case ev.Reachable:
				reachable <- struct{}{}
			case ev.Gone:
				gone <- ev.Instance
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Watch returned %v after cancel, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Watch did not return after cancel")
		}
	})
	return gone, reachable
}

func expectGone(t *testing.T, gone <-chan sessions.Instance, name, id string) {
	t.Helper()
	select {
	case inst := <-gone:
		if inst != (sessions.Instance{Name: name, ID: id}) {
			t.Fatalf("gone(%+v), want %s (%s)", inst, name, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no gone(%s) within 10 s", name)
	}
}

func TestWatchReportsStop(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.watch=" + randomHex(6)
	stopped, stoppedID := runContainer(t, "--label", label)
	b := newBackend(t, Config{Label: label})
	gone := watch(t, b)

	began := time.Now()
	dockerCLI(t, "stop", "-t", "2", stopped)
	expectGone(t, gone, stopped, stoppedID)
	t.Logf("docker stop reported after %v", time.Since(began))
}

// A pause (docker pause, docker commit) is no stop (issue 20, D2): Watch
// reports it and the unpause as such, never as Gone, so the registry keeps
// the session; only the removal that follows is Gone.
func TestWatchReportsPauseAndUnpauseNotGone(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.watch=" + randomHex(6)
	paused, pausedID := runContainer(t, "--label", label)
	b := newBackend(t, Config{Label: label})
	ctx, cancel := context.WithCancel(context.Background())
	evs := make(chan sessions.InstanceEvent, 64)
	done := make(chan error, 1)
	go func() { done <- b.Watch(ctx, func(ev sessions.InstanceEvent) { evs <- ev }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v after cancel", err)
		}
	}()
	waitWatching(t, b)
	next := func(what string) sessions.InstanceEvent {
		t.Helper()
		select {
		case ev := <-evs:
			if ev.Instance.ID != pausedID {
				t.Fatalf("%s: event %+v, want one about %s", what, ev, pausedID)
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event within 10 s", what)
		}
		return sessions.InstanceEvent{}
	}
	dockerCLI(t, "pause", paused)
	if ev := next("pause"); !ev.Paused || ev.Gone || ev.Unpaused {
		t.Errorf("after docker pause: %+v, want Paused only", ev)
	}
	dockerCLI(t, "unpause", paused)
	if ev := next("unpause"); !ev.Unpaused || ev.Gone || ev.Paused {
		t.Errorf("after docker unpause: %+v, want Unpaused only", ev)
	}
	dockerCLI(t, "rm", "-f", paused)
	for _, what := range []string{"die", "destroy"} {
		if ev := next(what); !ev.Gone {
			t.Errorf("after docker rm -f (%s): %+v, want Gone", what, ev)
		}
	}
}

// Watch reconnects when the event stream drops, and neither loses nor
// repeats events across the gap.
func TestWatchReconnects(t *testing.T) {
	needEngine(t)
	t.Parallel()
	px := newProxy(t)
	cli, err := client.NewClientWithOpts(client.WithHost("unix://"+px.path), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })

	label := "termgate.watch=" + randomHex(6)
	first, firstID := runContainer(t, "--label", label)
	second, secondID := runContainer(t, "--label", label)
	unlabelled, _ := runContainer(t)
	b := newBackend(t, Config{Client: cli, Label: label})
	gone, reachable := watchAll(t, b)

	dockerCLI(t, "stop", "-t", "2", first)
	expectGone(t, gone, first, firstID)
	if len(reachable) != 0 {
		t.Errorf("Reachable reported before any drop")
	}

	px.dropAll()
	dockerCLI(t, "stop", "-t", "2", unlabelled)
	dockerCLI(t, "stop", "-t", "2", second) // probably while reconnecting
	expectGone(t, gone, second, secondID)
	// The stream is back: the registry hears the engine is reachable (and
	// retries the kills that failed meanwhile).
	select {
	case <-reachable:
	case <-time.After(10 * time.Second):
		t.Errorf("no Reachable within 10 s of the reconnect")
	}
	select {
	case inst := <-gone:
		t.Errorf("unexpected gone(%+v)", inst)
	case <-time.After(300 * time.Millisecond):
	}
}

// proxy forwards a unix socket to the engine and can drop every connection,
// which looks like an engine restart to the client.
type proxy struct {
	path     string
	upstream func() (net.Conn, error)
	ln       net.Listener
	mu       sync.Mutex
	conns    map[net.Conn]bool
	wg       sync.WaitGroup
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = client.DefaultDockerHost
	}
	u, err := client.ParseHostURL(host)
	if err != nil || (u.Scheme != "unix" && u.Scheme != "tcp") || os.Getenv("DOCKER_TLS_VERIFY") != "" {
		t.Skipf("cannot proxy DOCKER_HOST=%s", host)
	}
	addr := u.Host // the socket path for unix://
	dir, err := os.MkdirTemp("", "tgproxy")
	if err != nil {
		t.Fatal(err)
	}
	px := &proxy{
		path:     filepath.Join(dir, "docker.sock"),
		upstream: func() (net.Conn, error) { return net.Dial(u.Scheme, addr) },
		conns:    map[net.Conn]bool{},
	}
	px.ln, err = net.Listen("unix", px.path)
	if err != nil {
		t.Fatal(err)
	}
	px.wg.Go(px.serve)
	t.Cleanup(func() {
		_ = px.ln.Close()
		px.dropAll()
		px.wg.Wait()
		_ = os.RemoveAll(dir)
	})
	return px
}

func (px *proxy) serve() {
	for {
		down, err := px.ln.Accept()
		if err != nil {
			return
		}
		up, err := px.upstream()
		if err != nil {
			_ = down.Close()
			continue
		}
		px.mu.Lock()
		px.conns[down], px.conns[up] = true, true
		px.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
			px.mu.Lock()
			delete(px.conns, dst)
			delete(px.conns, src)
			px.mu.Unlock()
		}
		px.wg.Go(func() { pipe(up, down) })
		px.wg.Go(func() { pipe(down, up) })
	}
}

func (px *proxy) dropAll() {
	px.mu.Lock()
	defer px.mu.Unlock()
	for c := range px.conns {
		_ = c.Close()
	}
}
