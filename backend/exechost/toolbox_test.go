package exechost

import (
	"bytes"
	"context"
	"io"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// toolboxExec is a runExec whose toolbox copies answer --ready (or, in
// the directories noexec names, fail as the runtime does there).
type toolboxExec struct {
	runExec
	noexec map[string]bool
}

func (x *toolboxExec) Exec(ctx context.Context, inst sessions.Instance, argv []string, opts ExecOptions) (Stream, error) {
	if len(argv) == 2 && argv[1] == "--ready" {
		x.mu.Lock()
		x.argvs, x.opts = append(x.argvs, argv), append(x.opts, opts)
		x.mu.Unlock()
		if x.noexec[path.Dir(path.Dir(argv[0]))] {
			return &codeStream{code: 126, stderr: "exec: permission denied"}, nil
		}
		return &codeStream{doneStream: doneStream{Reader: *bytes.NewReader([]byte(toolboxReady + "\n"))}}, nil
	}
	return x.runExec.Exec(ctx, inst, argv, opts)
}

func (x *toolboxExec) HolderDirs(context.Context, sessions.Instance) ([]string, error) {
	return []string{"/tmp", "/var/tmp"}, nil
}

type codeStream struct {
	doneStream
	code   int
	stderr string
}

func (s *codeStream) Wait(context.Context) (int, error) { return s.code, nil }
func (s *codeStream) Stderr() string                    { return s.stderr }

var fakeToolbox = holderbin.New([]byte("\x7fELF toolbox"), "test")

// TestToolboxWhereTheInstanceHasNoShell: with --toolbox auto a session
// and a command in an instance without /bin/sh run a fresh copy of the
// toolbox (checked with --ready, then run with --unlink, from a new upload
// directory each time), skipping a noexec directory; one with a shell
// runs its own; always uses it there too; never leaves the old ways.
func TestToolboxWhereTheInstanceHasNoShell(t *testing.T) {
	inst := sessions.Instance{Name: "web1", ID: "id1"}
	ctx := context.Background()
	for _, c := range []struct {
		mode    ToolboxMode
		hasSh   bool
		toolbox bool
	}{
		{"", false, true}, {ToolboxAuto, true, false}, {ToolboxAlways, true, true}, {ToolboxNever, false, false},
	} {
		x := &toolboxExec{runExec: runExec{hasSh: c.hasSh}, noexec: map[string]bool{"/tmp": true}}
		h, err := New(x, Config{Name: "test", GatewayID: "gw1", Durable: Durable{
			Holder: holderbin.New([]byte("\x7fELF holder"), "test"), Toolbox: c.mode, ToolboxBinary: fakeToolbox}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := h.Start(ctx, inst, sessions.StartSpec{Name: "default", SessionID: "s1"})
		if err != nil {
			t.Fatalf("%+v: start: %v", c, err)
		}
		p.(*Shell).Abandon()
		cmd, err := h.Run(ctx, inst, remote.Command{Line: "ls /"})
		if err != nil {
			t.Fatalf("%+v: run: %v", c, err)
		}
		_, _ = io.ReadAll(cmd)
		_ = cmd.Close()

		x.mu.Lock()
		argvs := slices.Clone(x.argvs)
		x.mu.Unlock()
		var shell, command []string
		for _, a := range argvs {
			if a[len(a)-1] == "--ready" || slices.Contains(a, "kill") {
				continue
			}
			if shell == nil {
				shell = a
			} else if command == nil {
				command = a
			}
		}
		if !c.toolbox {
			if strings.HasSuffix(shell[0], "/"+toolboxName) || strings.HasSuffix(command[0], "/"+toolboxName) {
				t.Errorf("%+v: the toolbox ran: %q, %q", c, shell, command)
			}
			continue
		}
		for _, a := range [][]string{shell, command} {
			if !strings.HasPrefix(a[0], "/var/tmp/"+uploadPrefix) || path.Base(a[0]) != toolboxName || a[1] != "--unlink" {
				t.Errorf("%+v: %q, want a fresh copy in /var/tmp (/tmp is noexec) run with --unlink", c, a)
			}
		}
		if shell[0] == command[0] {
			t.Errorf("%+v: the session and the command share a copy %q", c, shell[0])
		}
		if !slices.Equal(command[2:], []string{"-c", "ls /"}) {
			t.Errorf("%+v: command %q, want the toolbox's -c LINE", c, command)
		}
	}
}

// TestToolboxThatCannotRunSaysWhy: where no directory lets the toolbox run
// (a read-only root, noexec mounts) the start fails with a sentence that
// says so and what to do.
func TestToolboxThatCannotRunSaysWhy(t *testing.T) {
	x := &toolboxExec{noexec: map[string]bool{"/tmp": true, "/var/tmp": true}}
	h, err := New(x, Config{Name: "test", Durable: Durable{ToolboxBinary: fakeToolbox}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Start(context.Background(), sessions.Instance{Name: "web1", ID: "id1"}, sessions.StartSpec{Name: "default", SessionID: "s1"})
	if err == nil || !strings.Contains(err.Error(), "has no shell, and termgate's toolbox cannot run") || !strings.Contains(err.Error(), "noexec") {
		t.Fatalf("start: %v", err)
	}
	if _, err := ParseToolboxMode("sometimes"); err == nil {
		t.Fatal("ParseToolboxMode took sometimes")
	}
}
