package exechost

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// runExec is an Executor that records its execs; every exec prints
// nothing and exits 0.
type runExec struct {
	hasSh   bool
	mu      sync.Mutex
	argvs   [][]string
	opts    []ExecOptions
	uploads []string // directories
}

func (x *runExec) Exec(_ context.Context, _ sessions.Instance, argv []string, opts ExecOptions) (Stream, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.argvs, x.opts = append(x.argvs, argv), append(x.opts, opts)
	return &doneStream{}, nil
}

func (x *runExec) Upload(_ context.Context, _ sessions.Instance, dir, _ string, _ []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.uploads = append(x.uploads, dir)
	return nil
}

func (x *runExec) Exists(_ context.Context, _ sessions.Instance, paths []string) ([]bool, error) {
	have := make([]bool, len(paths))
	for i, p := range paths {
		have[i] = p == "/bin/sh" && x.hasSh
	}
	return have, nil
}

func (x *runExec) State(context.Context, sessions.Instance) (State, error) { return Running, nil }
func (x *runExec) HolderDirs(context.Context, sessions.Instance) ([]string, error) {
	return []string{"/tmp"}, nil
}
func (x *runExec) Instances(context.Context) ([]sessions.Instance, error) { return nil, nil }

type doneStream struct{ bytes.Reader }

func (s *doneStream) Write(b []byte) (int, error)                 { return len(b), nil }
func (s *doneStream) CloseWrite() error                           { return nil }
func (s *doneStream) Resize(context.Context, sessions.Size) error { return nil }
func (s *doneStream) Wait(context.Context) (int, error)           { return 0, nil }
func (s *doneStream) Stderr() string                              { return "" }
func (s *doneStream) Close() error                                { return nil }

// TestRunArgvMarkerAndKill: /bin/sh -c LINE where the instance has it, the
// words where not (--toolbox never); a marker of the gateway's own per command, TERM and
// the default size with a TTY, the stderr sink without; Close kills by
// that marker.
func TestRunArgvMarkerAndKill(t *testing.T) {
	inst := sessions.Instance{Name: "web1", ID: "id1"}
	for _, hasSh := range []bool{true, false} {
		x := &runExec{hasSh: hasSh}
		// --toolbox never: toolbox_test.go has the toolbox's commands.
		h, err := New(x, Config{Name: "test", GatewayID: "gw1", Durable: Durable{Holder: holderbin.New([]byte("\x7fELF fake"), "test"), Toolbox: ToolboxNever}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := h.Run(context.Background(), inst, remote.Command{Line: "echo  a 'b c'", TTY: true, Term: "vt100", Env: []string{"LANG=C"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(p); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		want := []string{"/bin/sh", "-c", "echo  a 'b c'"}
		if !hasSh {
			want = []string{"echo", "a", "'b", "c'"}
		}
		if !slices.Equal(x.argvs[0], want) {
			t.Errorf("hasSh %v: argv %q, want %q", hasSh, x.argvs[0], want)
		}
		o := x.opts[0]
		var marker string
		for _, kv := range o.Env {
			if v, ok := strings.CutPrefix(kv, procmark.EnvSession+"="); ok {
				marker = v
			}
		}
		if !strings.HasPrefix(marker, "gw1.c-") || !o.TTY || !o.Stdin || o.Size != sessions.DefaultSize ||
			!slices.Contains(o.Env, "TERM=vt100") || !slices.Contains(o.Env, "LANG=C") || o.Stderr != nil {
			t.Errorf("exec options %+v (marker %q)", o, marker)
		}
		switch {
		case len(x.argvs) != 2 || !slices.Contains(x.argvs[1], marker):
			t.Errorf("Close's kill exec %q, want one for %q", x.argvs[1:], marker)
		case hasSh && x.argvs[1][2] != procmark.KillScript:
			t.Errorf("Close's kill exec %q, want the kill script", x.argvs[1])
		case !hasSh && (len(x.uploads) != 1 || x.argvs[1][0] != x.uploads[0]+"/holder" || x.argvs[1][1] != "kill"):
			// No shell: the holder's kill, from a fresh upload.
			t.Errorf("Close's kill exec %q (uploads %q), want the uploaded holder's kill", x.argvs[1], x.uploads)
		}
	}

	x := &runExec{hasSh: true}
	h, _ := New(x, Config{Name: "test"})
	var errOut bytes.Buffer
	p, err := h.Run(context.Background(), inst, remote.Command{Line: "true", Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Close()
	if o := x.opts[0]; o.TTY || o.Stderr != &errOut || slices.ContainsFunc(o.Env, func(kv string) bool { return strings.HasPrefix(kv, "TERM=") }) {
		t.Errorf("non-TTY exec options %+v", o)
	}
}

// TestCommandsThatExitedShareTheirSweep: commands that ended by themselves
// are swept together, in one kill exec carrying every marker, so that
// back-to-back commands do not pay a kill exec each; a command closed
// before it exited (the client went away) is killed at once.
func TestCommandsThatExitedShareTheirSweep(t *testing.T) {
	inst := sessions.Instance{Name: "web1", ID: "id1"}
	x := &runExec{hasSh: true}
	h, err := New(x, Config{Name: "test", GatewayID: "gw1"})
	if err != nil {
		t.Fatal(err)
	}
	var ps []remote.Process
	for range 3 {
		p, err := h.Run(context.Background(), inst, remote.Command{Line: "true"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	x.mu.Lock()
	kills := slices.Clone(x.argvs[3:])
	x.mu.Unlock()
	if len(kills) != 1 {
		t.Fatalf("%d kill execs for three commands that exited, want 1: %q", len(kills), kills)
	}
	for _, o := range x.opts[:3] {
		for _, kv := range o.Env {
			if m, ok := strings.CutPrefix(kv, procmark.EnvSession+"="); ok && !slices.Contains(kills[0], m) {
				t.Errorf("the sweep %q misses marker %q", kills[0][4:], m)
			}
		}
	}

	// Still running when closed: killed without waiting to gather.
	p, err := h.Run(context.Background(), inst, remote.Command{Line: "sleep 100"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= sweepGather {
		t.Errorf("closing a running command took %v: it waited to gather", d)
	}
}
