package exechost

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/sessions"
)

// toolExec is an Executor whose execs play a tool as run(dir) says: what
// it prints, and its exit status once its output ends (-1: it never
// ends, until closed).
type toolExec struct {
	run   func(dir string) (stdout string, endless bool, code int)
	mu    sync.Mutex
	execs []string // the directory of every exec, in order
}

type toolStreamFake struct {
	r      io.Reader
	closed chan struct{}
	once   sync.Once
	code   int
}

func (s *toolStreamFake) Read(p []byte) (int, error) {
	select {
	case <-s.closed:
		return 0, io.EOF
	default:
	}
	return s.r.Read(p)
}
func (s *toolStreamFake) Write(p []byte) (int, error)                 { return len(p), nil }
func (s *toolStreamFake) CloseWrite() error                           { return nil }
func (s *toolStreamFake) Resize(context.Context, sessions.Size) error { return nil }
func (s *toolStreamFake) Stderr() string                              { return "termgate-holder: no such thing" }
func (s *toolStreamFake) Close() error                                { s.once.Do(func() { close(s.closed) }); return nil }
func (s *toolStreamFake) Wait(ctx context.Context) (int, error) {
	if s.code >= 0 {
		return s.code, nil
	}
	select {
	case <-s.closed:
		return 0, ErrNoStatus
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// endless is a reader of x forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// blocked is a reader that never returns until its stream is closed.
type blocked struct{ closed chan struct{} }

func (b blocked) Read([]byte) (int, error) { <-b.closed; return 0, io.EOF }

func (x *toolExec) Exec(_ context.Context, _ sessions.Instance, argv []string, _ ExecOptions) (Stream, error) {
	if len(argv) < 5 || !strings.Contains(strings.Join(argv, " "), " sftp") {
		// procmark's kill script: nothing to kill here.
		return &toolStreamFake{r: strings.NewReader(""), closed: make(chan struct{}), code: 0}, nil
	}
	dir := argv[4] // /bin/sh -c launchScript termgate-holder DIR ...
	x.mu.Lock()
	x.execs = append(x.execs, dir)
	x.mu.Unlock()
	out, forever, code := x.run(dir)
	s := &toolStreamFake{closed: make(chan struct{}), code: code}
	switch {
	case forever && out == "":
		s.r = blocked{s.closed}
	case forever:
		s.r = endless{}
	default:
		s.r = strings.NewReader(out)
	}
	return s, nil
}

func (x *toolExec) Upload(context.Context, sessions.Instance, string, string, []byte) error {
	return nil
}
func (x *toolExec) Exists(_ context.Context, _ sessions.Instance, paths []string) ([]bool, error) {
	have := make([]bool, len(paths))
	for i := range have {
		have[i] = true
	}
	return have, nil
}
func (x *toolExec) State(context.Context, sessions.Instance) (State, error) { return Running, nil }
func (x *toolExec) HolderDirs(context.Context, sessions.Instance) ([]string, error) {
	return []string{"/a", "/b"}, nil
}
func (x *toolExec) Instances(context.Context) ([]sessions.Instance, error) { return nil, nil }

func toolHost(t *testing.T, x *toolExec) *Host {
	t.Helper()
	h, err := New(x, Config{Name: "fake", Durable: Durable{Holder: holderbin.New([]byte("\x7fELF fake"), "test")}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var toolInst = sessions.Instance{Name: "i1", ID: "id1"}

// TestRunToolSkipsADirectoryWhereItCannotRun: a noexec directory (status
// 126) is skipped for the next, which is remembered and tried first.
func TestRunToolSkipsADirectoryWhereItCannotRun(t *testing.T) {
	x := &toolExec{run: func(dir string) (string, bool, int) {
		if dir == "/a" {
			return "", false, 126
		}
		return holder.ToolReady + "\nSFTP", false, 0
	}}
	h := toolHost(t, x)
	for range 2 {
		s, err := h.runTool(context.Background(), toolInst, "sftp")
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(s, b); err != nil || string(b) != "SFTP" {
			t.Fatalf("stream after the ready line: %q %v", b, err)
		}
		_ = s.Close()
	}
	if strings.Join(x.execs, " ") != "/a /b /b" {
		t.Fatalf("execs in %v, want /a /b /b", x.execs)
	}
}

// TestRunToolBoundsAHostileTool: a tool that prints an endless first line,
// or nothing and never ends, costs a bounded wait and an error (not a
// CannotHold: it ran); one that fails says its reason.
func TestRunToolBoundsAHostileTool(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     string
		forever bool
		code    int
		want    string
	}{
		{"endless line", "", true, -1, "did not start"},
		{"silent", "", true, -1, "deadline"},
		{"fails", "", false, 1, "no such thing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if tc.name == "endless line" {
				out = "x"
			}
			x := &toolExec{run: func(string) (string, bool, int) { return out, tc.forever, tc.code }}
			h := toolHost(t, x)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := h.runTool(ctx, toolInst, "sftp")
			var cannot *CannotHold
			if err == nil || errors.As(err, &cannot) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("runTool: %v, want an error saying %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("runTool took %v", d)
			}
		})
	}
}
