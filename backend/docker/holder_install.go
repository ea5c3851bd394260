package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions, Docker side: the holder (cmd/termgate-holder) is copied
// into the instance with the Engine API's archive upload and runs there as
// a daemon, one per instance, at a fixed socket that every gateway finds.
//
// Where: the first of holderDirs where the upload lands AND the binary
// runs gets a directory .termgate (0700) holding the binary
// (holder-HASH), the socket (holder.sock), its lock and its log. The
// container's configuration rules out some at once (usableDirs): a
// read-only root filesystem refuses every upload, even to a tmpfs on it;
// a tmpfs mount is one the archive API cannot see into (an upload
// "succeeds" into the directory under it; Docker's /dev/shm is one, and
// noexec too). Of the rest, a directory that is missing, refuses the
// upload or is mounted noexec fails the upload or the start exec, and the
// next one is tried.
var holderDirs = []string{"/tmp", "/var/tmp", "/run", "/"}

const (
	holderHome   = ".termgate"
	holderSocket = "holder.sock"
)

func holderHomeIn(dir string) string { return path.Join(dir, holderHome) }

func holderPath(dir, hash string) string { return path.Join(holderHomeIn(dir), "holder-"+hash) }

func socketIn(dir string) string { return path.Join(holderHomeIn(dir), holderSocket) }

// heldConfig is what a durable Backend holds sessions with.
type heldConfig struct {
	bin    *holderbin.Binary
	idle   time.Duration
	buffer int

	// cannot remembers why a container cannot host the holder: a
	// read-only root filesystem and noexec mounts are fixed for a
	// container's life, so its later sessions skip the futile upload.
	mu     sync.Mutex
	cannot map[string]string // by container ID
	// worked remembers the directory the holder ran from, tried first
	// next time: a directory that fails leaves its upload behind (no API
	// removes a file), so it is tried once per container, not per session.
	worked map[string]string // by container ID
}

// maxCannot bounds heldConfig.cannot (it is cleared when full).
const maxCannot = 4096

func (h *heldConfig) cannotHold(containerID string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	why, ok := h.cannot[containerID]
	return why, ok
}

func (h *heldConfig) rememberCannot(containerID, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cannot = remember(h.cannot, containerID, why)
}

func (h *heldConfig) rememberWorked(containerID, dir string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.worked = remember(h.worked, containerID, dir)
}

func (h *heldConfig) workedIn(containerID string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.worked[containerID]
}

// remember sets m[k] = v in a map bounded by maxCannot entries (cleared
// when full: it is only a cache).
func remember(m map[string]string, k, v string) map[string]string {
	if m == nil || len(m) >= maxCannot {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func newHeldConfig(cfg Config) (*heldConfig, error) {
	bin := cfg.Holder
	if bin == nil {
		var err error
		if bin, err = holderbin.Load(); err != nil {
			return nil, err
		}
	}
	h := &heldConfig{bin: bin, idle: cfg.IdleTimeout, buffer: cfg.BufferSize}
	if h.idle <= 0 {
		h.idle = 30 * time.Minute
	}
	if h.buffer < sessions.MinBufferSize {
		h.buffer = 64 << 10
	}
	return h, nil
}

// errCannotHold says why an instance cannot host a holder; Start then
// falls back to an ordinary session.
type errCannotHold struct{ why string }

func (e *errCannotHold) Error() string { return "the instance cannot host the holder: " + e.why }

// holderTar is the upload: the .termgate directory and the binary under a
// temporary name, which the start exec renames into place (--install-as),
// so a gateway racing this one never runs a half-written file.
// Its entries belong to uid:gid (the engine applies a tar's owners unless
// CopyUIDGID asks it to look the container's user up by name).
func holderTar(data []byte, staged string, uid, gid int) []byte {
	var buf bytes.Buffer
	buf.Grow(len(data) + 4096)
	tw := tar.NewWriter(&buf)
	now := time.Now()
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: holderHome + "/", Mode: 0o700, ModTime: now, Uid: uid, Gid: gid})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: holderHome + "/" + staged, Mode: 0o700, Size: int64(len(data)), ModTime: now, Uid: uid, Gid: gid})
	_, _ = tw.Write(data)
	_ = tw.Close()
	return buf.Bytes()
}

// exists reports whether p exists in the container (as the archive API
// sees it).
func (b *Backend) exists(ctx context.Context, containerID, p string) (bool, error) {
	_, err := b.cli.ContainerStatPath(ctx, containerID, p)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	case client.IsErrConnectionFailed(err):
		return false, b.engineErr("stat "+p, err)
	}
	return false, nil // any other refusal: treat as absent, the upload will say why
}

// upload copies the holder binary into dir under a temporary name and
// returns that name's path. A read-only root filesystem is an
// *errCannotHold; a missing or refusing directory is another error.
func (b *Backend) upload(ctx context.Context, containerID, dir string) (string, error) {
	staged := ".holder-" + b.held.bin.Hash + "." + randomSuffix()
	// The holder runs as the container's user, who must own its files.
	info, err := b.cli.ContainerInspect(ctx, containerID)
	if err != nil {
		return "", b.engineErr("inspect container", err)
	}
	user := ""
	if info.Config != nil {
		user = info.Config.User
	}
	uid, gid, numeric := numericUser(user)
	err = b.cli.CopyToContainer(ctx, containerID, dir, bytes.NewReader(holderTar(b.held.bin.Data, staged, uid, gid)),
		container.CopyToContainerOptions{CopyUIDGID: !numeric})
	switch {
	case err == nil:
		return path.Join(holderHomeIn(dir), staged), nil
	case client.IsErrConnectionFailed(err):
		return "", b.engineErr("copy the holder into the instance", err)
	case strings.Contains(err.Error(), "read-only"):
		return "", &errCannotHold{why: "its root filesystem is read-only (" + err.Error() + ")"}
	}
	return "", fmt.Errorf("copy the holder to %s: %w", dir, err)
}

// execResult is what a start exec printed, and its status when it ended.
type execResult struct {
	Stdout, Stderr string
	Code           int
}

// numericUser reads a container's user ("", "UID" or "UID:GID"; a name
// is not numeric: the engine looks it up in the image's passwd for
// CopyUIDGID, which a bare UID may lack).
func numericUser(user string) (uid, gid int, ok bool) {
	if user == "" {
		return 0, 0, true
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	if !hasGroup {
		return uid, 0, true // as the runtime does without a passwd entry
	}
	gid, err = strconv.Atoi(g)
	if err != nil || gid < 0 {
		return 0, 0, false
	}
	return uid, gid, true
}

// serveOutcome is what a start exec did.
type serveOutcome int

const (
	serveStarted serveOutcome = iota // a new holder holds the session
	serveHeld                        // a live holder was already there
	serveCannot                      // the binary could not run there
)

// parseServe reads the start exec's result: "holder PID SOCKET" or
// "already held SOCKET" on its first line; a runtime refusal to run the
// file (status 126/127, "exec failed") means the directory does not work.
func parseServe(r execResult, sock string) (serveOutcome, error) {
	line, _, _ := strings.Cut(r.Stdout, "\n")
	f := strings.Fields(line)
	switch {
	case len(f) == 3 && f[0] == "holder" && f[2] == sock:
		if _, err := strconv.Atoi(f[1]); err == nil {
			return serveStarted, nil
		}
	case len(f) == 3 && f[0] == "already" && f[1] == "held" && f[2] == sock:
		return serveHeld, nil
	case r.Code == 126 || r.Code == 127:
		// The runtime could not run the file (runc says "exec failed:
		// ... permission denied" or "no such file"); the holder itself
		// never exits so.
		return serveCannot, nil
	}
	msg := strings.TrimSpace(r.Stderr + " " + r.Stdout)
	if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return serveCannot, fmt.Errorf("the holder did not start (status %d): %s", r.Code, msg)
}

// startHeld installs the holder where it runs, starts it for a new
// session and connects to it, all with one exec ("serve --attach": the
// start exec's status line, then the protocol), or connects to the holder
// a racing gateway just started. The session it holds may be the racer's
// (Held().Session says which). An *errCannotHold means: use an ordinary
// session.
func (b *Backend) startHeld(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec, size sessions.Size, term string) (sessions.Process, error) {
	if why, ok := b.held.cannotHold(inst.ID); ok {
		return nil, &errCannotHold{why: why}
	}
	p, err := b.startHeldIn(ctx, inst, spec, size, term)
	if cannot := (*errCannotHold)(nil); errors.As(err, &cannot) {
		b.held.rememberCannot(inst.ID, cannot.why)
	}
	return p, err
}

// usableDirs returns the holderDirs the container's configuration leaves
// (an *errCannotHold when none).
func (b *Backend) usableDirs(ctx context.Context, containerID string) ([]string, error) {
	info, err := b.cli.ContainerInspect(ctx, containerID)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("inspect container: %w: %w", sessions.ErrNotFound, err)
		}
		return nil, b.engineErr("inspect container", err)
	}
	var tmpfs []string
	if hc := info.HostConfig; hc != nil {
		if hc.ReadonlyRootfs {
			return nil, &errCannotHold{why: "its root filesystem is read-only"}
		}
		for p := range hc.Tmpfs {
			tmpfs = append(tmpfs, p)
		}
	}
	for _, m := range info.Mounts {
		if m.Type == "tmpfs" {
			tmpfs = append(tmpfs, m.Destination)
		}
	}
	var dirs []string
	for _, dir := range holderDirs {
		if !slices.ContainsFunc(tmpfs, func(t string) bool { return dir == t || strings.HasPrefix(dir, strings.TrimSuffix(t, "/")+"/") }) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil, &errCannotHold{why: "every directory it could go to is a tmpfs mount (" + strings.Join(tmpfs, ", ") + ")"}
	}
	return dirs, nil
}

func (b *Backend) startHeldIn(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec, size sessions.Size, term string) (sessions.Process, error) {
	dirs, err := b.usableDirs(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	if d := b.held.workedIn(inst.ID); d != "" {
		if i := slices.Index(dirs, d); i > 0 {
			dirs = append([]string{d}, slices.Delete(dirs, i, i+1)...)
		}
	}
	var why []string
	for _, dir := range dirs {
		run, install, err := b.holderBinary(ctx, inst.ID, dir)
		if cannot := (*errCannotHold)(nil); errors.As(err, &cannot) {
			return nil, err
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrEngineUnreachable) {
				return nil, err
			}
			why = append(why, err.Error())
			continue
		}
		cmd := []string{run, "serve", "--socket", socketIn(dir), "--session", spec.SessionID, "--attach",
			"--idle", b.held.idle.String(), "--buffer", strconv.Itoa(b.held.buffer),
			"--cols", strconv.Itoa(size.Cols), "--rows", strconv.Itoa(size.Rows), "--env", "TERM=" + term}
		if install != "" {
			cmd = append(cmd, "--install-as", install)
		}
		cmd = append(append(cmd, "--"), b.command(spec.Shell)...)
		x, err := b.openExec(ctx, inst, cmd)
		if err != nil {
			return nil, fmt.Errorf("start the holder: %w", err)
		}
		stop := x.deadline(ctx)
		line, lerr := x.r.ReadSlice('\n')
		stop()
		res := execResult{Stdout: string(line)}
		if lerr != nil || !bytes.HasPrefix(line, []byte("holder ")) && !bytes.HasPrefix(line, []byte("already held ")) {
			// The exec failed (or hangs): how?
			x.conn.Close()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("start the holder in %q: %w", inst.Name, ctx.Err())
			}
			res.Stderr = x.demux.Stderr()
			res.Code = b.execStatus(ctx, x.id)
		}
		outcome, err := parseServe(res, socketIn(dir))
		if err != nil {
			x.conn.Close()
			return nil, fmt.Errorf("in %q: %w", inst.Name, err)
		}
		if outcome == serveCannot {
			why = append(why, fmt.Sprintf("%s: %s", dir, strings.TrimSpace(res.Stdout)))
			continue
		}
		b.held.rememberWorked(inst.ID, dir)
		// A Start is for an attaching client: counted from the hello on,
		// so a short idle timeout cannot reap the session before the
		// registry says so.
		p, err := b.handshake(ctx, inst, dir, x, 1)
		if err != nil {
			return nil, fmt.Errorf("start a held session in %q: %w", inst.Name, err)
		}
		return p, nil
	}
	return nil, &errCannotHold{why: "no writable directory lets it run: " + strings.Join(why, "; ")}
}

// execStatus returns an ended exec's exit status (-1 when the engine does
// not say within a second).
func (b *Backend) execStatus(ctx context.Context, execID string) int {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		info, err := b.cli.ContainerExecInspect(ctx, execID)
		if err == nil && !info.Running {
			return info.ExitCode
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return -1
		case <-t.C:
		}
	}
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
