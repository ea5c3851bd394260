package exechost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/sessions"
)

// Tools: the holder binary's one-exec subcommands (termgate-holder sftp,
// dial), run on any Host, durable or not. They are found, uploaded and
// launched exactly as a durable session's holder is (holderCommand,
// launchScript: never a binary found in the instance by its path alone),
// and share the Host's holderSite: its binary and the caches of instances
// that cannot run it and of the directory that worked.
//
// Installing: a fresh upload is renamed into .termgate by the tool itself
// (its --install-as, as attach's): the simplest safe way, one exec, and the
// same checked rename (holder.MakeHome, the upload directory the exec
// user's) the sessions' holder does.

// toolReadyTimeout bounds the wait for a tool's ready line: the holder's
// start, and a dial's connect (10 s in the holder).
const toolReadyTimeout = 15 * time.Second

// toolEndWait is how long Close waits for a tool to end by itself (its
// stdin ended) before it kills it.
const toolEndWait = 2 * time.Second

// runTool runs this build's holder with args (a subcommand and its
// arguments) in inst, and returns its stream once the tool said it runs
// (holder.ToolReady, taken off the stream). A *CannotHold means the holder
// cannot run in the instance (read-only root, noexec, no binary built); any
// other error is the tool's own (a dial that failed: its stderr says why).
// Close ends the tool: it ends by itself once its stdin does, and is killed
// (with everything it started) when it does not within toolEndWait.
func (h *Host) runTool(ctx context.Context, inst sessions.Instance, args ...string) (Stream, error) {
	if inst.ID == "" {
		return nil, fmt.Errorf("in %q: empty instance id: %w", inst.Name, sessions.ErrNotFound)
	}
	if len(args) == 0 {
		return nil, errors.New("runTool: no subcommand")
	}
	if _, err := h.site.binary(); err != nil {
		return nil, &CannotHold{Why: err.Error()}
	}
	if why := h.site.get(&h.site.cannot, inst.ID); why != "" {
		return nil, &CannotHold{Why: why}
	}
	s, err := h.runToolIn(ctx, inst, args)
	if cannot := (*CannotHold)(nil); errors.As(err, &cannot) && !cannot.passing {
		h.site.set(&h.site.cannot, inst.ID, cannot.Why)
	}
	return s, err
}

func (h *Host) runToolIn(ctx context.Context, inst sessions.Instance, args []string) (Stream, error) {
	dirs, err := h.holderDirs(ctx, inst)
	if err != nil {
		return nil, err
	}
	shell, err := h.hasShell(ctx, inst)
	if err != nil {
		return nil, err
	}
	var why []string
	for _, dir := range dirs {
		var cmd []string
		if shell {
			cmd, err = h.toolCommand(ctx, inst, dir, args)
		} else {
			cmd, err = h.toolCommandNoShell(ctx, inst, dir, args)
		}
		var cannot *CannotHold
		switch {
		case errors.As(err, &cannot) || err != nil && (ctx.Err() != nil || !errors.Is(err, ErrRefused)):
			return nil, err
		case err != nil:
			why = append(why, err.Error())
			continue
		}
		t, res, err := h.startTool(ctx, inst, cmd)
		if err != nil {
			return nil, err
		}
		if t != nil {
			h.site.set(&h.site.worked, inst.ID, dir)
			return t, nil
		}
		// The directory does not work (noexec: the runtime's 126/127;
		// launchScript's or the holder's refusal), as for a session.
		if res.Code == 126 || res.Code == 127 || res.Code == holder.ExitUntrusted && strings.Contains(res.Stderr, "cannot hold here") {
			why = append(why, fmt.Sprintf("%s: %s", dir, strings.TrimSpace(res.Stderr)))
			continue
		}
		// The tool ran and failed: its own reason (the dial's, say).
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(res.Stderr), "termgate-holder:"))
		if len(msg) > 512 {
			msg = msg[:512] + "..."
		}
		if msg == "" {
			msg = fmt.Sprintf("it exited with status %d", res.Code)
		}
		return nil, fmt.Errorf("%s in %q: %s", args[0], inst.Name, msg)
	}
	return nil, &CannotHold{Why: "no writable directory lets it run: " + strings.Join(why, "; ")}
}

// toolCommand is the command that runs the tool in dir through
// launchScript, as a session's holder is run.
func (h *Host) toolCommand(ctx context.Context, inst sessions.Instance, dir string, args []string) ([]string, error) {
	run, install, err := h.holderCommand(ctx, inst, dir)
	if err != nil {
		return nil, err
	}
	cmd := append(run, args[0])
	if install != "" {
		cmd = append(cmd, "--install-as", install)
	}
	return append(cmd, args[1:]...), nil
}

// toolCommandNoShell is the command for an instance without /bin/sh (a
// FROM scratch image), where launchScript cannot run: the binary is always
// uploaded afresh into a new directory of its own (created 0700 for the
// exec user by Upload, under an unguessable name, so nothing planted can
// be at its path) and run by that path; it then installs itself over
// .termgate's copy (--install-as: holder.MakeHome checks the directory),
// which removes the upload directory, so nothing piles up.
func (h *Host) toolCommandNoShell(ctx context.Context, inst sessions.Instance, dir string, args []string) ([]string, error) {
	hb, err := h.site.binary()
	if err != nil {
		return nil, err
	}
	up := path.Join(dir, uploadPrefix+randomSuffix())
	if err := h.x.Upload(ctx, inst, up, "holder", hb.Data); err != nil {
		return nil, err
	}
	cmd := []string{path.Join(up, "holder"), args[0], "--install-as", binaryIn(dir, hb.Hash)}
	return append(cmd, args[1:]...), nil
}

// hasShell reports whether the instance has /bin/sh (remembered per
// instance: an image does not grow one).
func (h *Host) hasShell(ctx context.Context, inst sessions.Instance) (bool, error) {
	switch h.site.get(&h.site.shell, inst.ID) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	have, err := h.x.Exists(ctx, inst, []string{"/bin/sh"})
	if err != nil {
		return false, err
	}
	h.site.set(&h.site.shell, inst.ID, map[bool]string{true: "yes", false: "no"}[have[0]])
	return have[0], nil
}

// startTool starts cmd (marked, so that Close can kill what it left) and
// reads its ready line: a running tool, or (nil) how the exec ended.
func (h *Host) startTool(ctx context.Context, inst sessions.Instance, cmd []string) (*toolStream, execResult, error) {
	marker := h.oneOffMarker("t")
	s, err := h.x.Exec(ctx, inst, cmd, ExecOptions{Stdin: true, Env: []string{procmark.EnvSession + "=" + marker}})
	if err != nil {
		if errors.Is(err, ErrMaybeStarted) {
			h.killTool(ctx, inst, marker)
		}
		return nil, execResult{}, fmt.Errorf("in %q: %w", inst.Name, err)
	}
	x := &execConn{s: s, r: bufio.NewReaderSize(s, 64<<10)}
	// One context bounds the wait, so that whichever deadline ends it
	// (the caller's or toolReadyTimeout) is known afterwards: two timers
	// raced, and a caller's deadline could read as a failed start.
	rctx, cancel := context.WithTimeout(ctx, toolReadyTimeout)
	stopCtx := context.AfterFunc(rctx, x.shutdown)
	line, lerr := readLine(x.r, 256)
	timedOut := !stopCtx() // shutdown ran, or runs: the stream is gone
	cancel()
	if lerr == nil && line == holder.ToolReady && !timedOut {
		ts := &toolStream{h: h, inst: inst, marker: marker, x: x}
		// The caller's context bounds the stream's whole life: a read
		// that stalls ends with it.
		ts.stop = context.AfterFunc(ctx, func() { _ = ts.Close() })
		return ts, execResult{}, nil
	}
	if ctx.Err() != nil {
		x.shutdown()
		h.killTool(ctx, inst, marker)
		return nil, execResult{}, fmt.Errorf("in %q: %w", inst.Name, ctx.Err())
	}
	if timedOut {
		x.shutdown()
		h.killTool(ctx, inst, marker)
		return nil, execResult{}, fmt.Errorf("in %q: the holder did not start: it said nothing within %v", inst.Name, toolReadyTimeout)
	}
	code, werr := x.exit()
	res := execResult{Stdout: line, Stderr: s.Stderr(), Code: code}
	x.shutdown()
	if werr != nil { // no status: the exec itself failed, or hangs
		h.killTool(ctx, inst, marker)
		if h.gone(context.WithoutCancel(ctx), inst) {
			return nil, res, fmt.Errorf("in %q: %w: %w", inst.Name, sessions.ErrNotFound, werr)
		}
		return nil, res, fmt.Errorf("in %q: the holder did not start: %w %s", inst.Name, werr, strings.TrimSpace(res.Stderr))
	}
	return nil, res, nil
}

// readLine reads one line of at most max bytes, without its newline.
func readLine(r *bufio.Reader, max int) (string, error) {
	var b []byte
	for len(b) <= max {
		c, err := r.ReadByte()
		if err != nil {
			return string(b), err
		}
		if c == '\n' {
			return string(b), nil
		}
		b = append(b, c)
	}
	return string(b), errors.New("line too long")
}

// killTool ends the marked tool and what it started (a stuck dial, a
// client gone mid-transfer), bounded by killTimeout.
func (h *Host) killTool(ctx context.Context, inst sessions.Instance, marker string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	if _, err := h.kills.Kill(kctx, killKey(inst), marker); err != nil && !h.gone(kctx, inst) {
		h.log.Warn(h.name+": ending a tool", "instance", inst.Name, "err", err)
	}
}

// toolStream is a running tool's stream: a Stream (so a remote.Conn too)
// whose reads come after the ready line.
type toolStream struct {
	h      *Host
	inst   sessions.Instance
	marker string
	x      *execConn
	stop   func() bool // lifts the context's Close
	once   sync.Once
}

func (t *toolStream) Read(p []byte) (int, error)  { return t.x.r.Read(p) }
func (t *toolStream) Write(p []byte) (int, error) { return t.x.s.Write(p) }
func (t *toolStream) CloseWrite() error           { return t.x.s.CloseWrite() }
func (t *toolStream) Stderr() string              { return t.x.s.Stderr() }

func (t *toolStream) Resize(ctx context.Context, size sessions.Size) error {
	return t.x.s.Resize(ctx, size)
}

func (t *toolStream) Wait(ctx context.Context) (int, error) { return t.x.s.Wait(ctx) }

// Close ends the tool's stdin, gives it toolEndWait to end by itself (an
// SFTP server does at once), kills it (and what it started) otherwise, and
// drops the stream. Idempotent; it returns once that is done.
func (t *toolStream) Close() error {
	t.once.Do(func() {
		if t.stop != nil {
			t.stop()
		}
		_ = t.x.s.CloseWrite()
		ctx, cancel := context.WithTimeout(context.Background(), toolEndWait)
		_, err := t.x.s.Wait(ctx)
		cancel()
		t.x.shutdown()
		if err != nil {
			t.h.killTool(context.Background(), t.inst, t.marker)
		}
	})
	return nil
}
