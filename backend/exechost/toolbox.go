package exechost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/internal/toolboxbin"
	"github.com/termgate/termgate/sessions"
)

// The toolbox (cmd/termgate-toolbox, docs/TOOLBOX.md): a shell and common
// utilities the Host brings into an instance that has no shell of its own
// (a distroless or FROM scratch image), for its sessions and one-off
// commands.
//
// Trust: as the holder's in an instance without /bin/sh
// (toolCommandNoShell), every copy is uploaded afresh into a new
// directory of its own (created 0700 for the exec user by Upload, under an
// unguessable name, so nothing planted can be at its path) and run by that
// path: nothing found in the instance is ever run. The copy removes itself
// and that directory once it runs (--unlink: a running program's file
// can go), so nothing of it stays in the instance; what it started is the
// session's (the marker is inherited), ended by a reset as a shell's is.

// ToolboxMode says when sessions and commands run in the toolbox.
type ToolboxMode string

const (
	// ToolboxAuto (the default; "" too) uses it where the instance has
	// no /bin/sh and the session names no shell of its own.
	ToolboxAuto ToolboxMode = "auto"
	// ToolboxAlways uses it in every instance.
	ToolboxAlways ToolboxMode = "always"
	// ToolboxNever never does: an instance without a shell gets none.
	ToolboxNever ToolboxMode = "never"
)

// ParseToolboxMode reads auto, always or never.
func ParseToolboxMode(s string) (ToolboxMode, error) {
	switch m := ToolboxMode(s); m {
	case "", ToolboxAuto:
		return ToolboxAuto, nil
	case ToolboxAlways, ToolboxNever:
		return m, nil
	}
	return "", fmt.Errorf("toolbox mode %q: use auto, always or never", s)
}

// toolboxName is the copy's file name in its upload directory.
const toolboxName = "toolbox"

// toolboxReady is what "termgate-toolbox --ready" prints.
const toolboxReady = "termgate-toolbox ready"

// toolboxSite is the Host's toolbox: its mode and its binary, loaded on
// first use.
type toolboxSite struct {
	mode  ToolboxMode
	given *holderbin.Binary
	load  sync.Once
	bin   *holderbin.Binary
	err   error
}

func (t *toolboxSite) binary() (*holderbin.Binary, error) {
	t.load.Do(func() {
		t.bin = t.given
		if t.bin == nil {
			t.bin, t.err = toolboxbin.Load()
		}
	})
	return t.bin, t.err
}

// useToolbox reports whether a session or command in inst runs in the
// toolbox: always, never, or (auto) where inst has no /bin/sh and no
// shell of the session's own was named (that one is run as asked).
func (h *Host) useToolbox(ctx context.Context, inst sessions.Instance, ownShell bool) (bool, error) {
	switch h.toolbox.mode {
	case ToolboxNever:
		return false, nil
	case ToolboxAlways:
		return true, nil
	}
	if ownShell {
		return false, nil
	}
	shell, err := h.hasShell(ctx, inst)
	return !shell, err
}

// toolboxArgv copies the toolbox into inst, where it runs, and returns the
// command that runs that copy (which removes itself once it runs): the
// first of the holder's directories where a copy lands and its --ready
// check answers; a directory that refuses the upload or whose copy does
// not run (noexec: the runtime's 126 or 127) is skipped for the next. The
// error says why none worked (a read-only root filesystem).
func (h *Host) toolboxArgv(ctx context.Context, inst sessions.Instance) ([]string, error) {
	tb, err := h.toolbox.binary()
	if err != nil {
		return nil, err
	}
	dirs, err := h.holderDirs(ctx, inst)
	if cannot := (*CannotHold)(nil); errors.As(err, &cannot) {
		return nil, noToolbox(inst, cannot.Why)
	}
	if err != nil {
		return nil, err
	}
	var why []string
	for _, dir := range dirs {
		up := path.Join(dir, uploadPrefix+randomSuffix())
		if err := h.x.Upload(ctx, inst, up, toolboxName, tb.Data); err != nil {
			if ctx.Err() != nil || !errors.Is(err, ErrRefused) {
				return nil, fmt.Errorf("copy the toolbox into %q: %w", inst.Name, err)
			}
			why = append(why, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		exe := path.Join(up, toolboxName)
		out, code, stderr, err := h.execOutput(ctx, inst, []string{exe, "--ready"})
		switch {
		case err != nil:
			return nil, fmt.Errorf("run the toolbox in %q: %w", inst.Name, err)
		case code == 0 && strings.TrimSpace(out) == toolboxReady:
			h.site.set(&h.site.worked, inst.ID, dir)
			return []string{exe, "--unlink"}, nil
		case code == 126 || code == 127:
			why = append(why, fmt.Sprintf("%s: %s", dir, stderr))
			continue
		}
		return nil, fmt.Errorf("run the toolbox in %q: its check exited with status %d: %s", inst.Name, code, stderr)
	}
	return nil, noToolbox(inst, "no writable directory lets a program run: "+strings.Join(why, "; "))
}

// noToolbox is the refusal the user reads where the toolbox cannot run.
func noToolbox(inst sessions.Instance, why string) error {
	return &sessions.NoShellError{Why: fmt.Sprintf("instance %q has no shell, and termgate's toolbox cannot run in it either (%s): "+
		"give it a writable /tmp without noexec (an emptyDir or tmpfs mount), or use an image with /bin/sh", inst.Name, why)}
}

// execOutput runs argv (no TTY, no stdin) and returns its stdout (at most
// 4 KiB), exit status and stderr (trimmed, bounded).
func (h *Host) execOutput(ctx context.Context, inst sessions.Instance, argv []string) (string, int, string, error) {
	s, err := h.x.Exec(ctx, inst, argv, ExecOptions{})
	if err != nil {
		return "", 0, "", err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	var stdout bytes.Buffer
	_, rerr := io.Copy(&limitWriter{w: &stdout, n: 4 << 10}, s)
	stop()
	if ctx.Err() != nil {
		return "", 0, "", ctx.Err()
	}
	code, err := s.Wait(ctx)
	if err == nil && rerr != nil {
		err = rerr
	}
	stderr := strings.TrimSpace(s.Stderr())
	if len(stderr) > 512 {
		stderr = stderr[:512] + "..."
	}
	return stdout.String(), code, stderr, err
}
