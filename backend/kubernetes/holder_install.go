package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions, Kubernetes side: as with Docker, the holder
// (cmd/termgate-holder) runs in the instance as a daemon, one per
// container, at a socket every gateway finds; unlike Docker, the API has no
// file upload, so everything goes through execs (and needs /bin/sh, which
// the backend needs anyway):
//
//   - serveScript runs this build's holder from the first of holderDirs
//     that has it ("serve --attach": the start is one exec), or says that
//     none has it and whether the container has tar;
//   - uploadScript receives the binary on stdin, as `kubectl cp` does (a
//     tar stream for `tar x`, else the bare file for `cat >`), checks that
//     it runs there (a noexec mount, a foreign architecture) and renames it
//     into place; a read-only or missing directory fails it, and the next
//     directory is tried;
//   - listScript lists the directories whose holder socket exists
//     (adoption, and a kill waiting for its holder to go).
//
// An exec sees the container's real mounts, so a tmpfs /tmp (which
// Docker's archive API cannot see into) is just another directory here.
var holderDirs = []string{"/tmp", "/var/tmp", "/run", "/"}

const (
	holderHome   = ".termgate"
	holderSocket = "holder.sock"
	// noHolder is serveScript's and attachScript's status when this
	// build's holder is not in the container.
	noHolder = 200
)

func holderHomeIn(dir string) string { return path.Join(dir, holderHome) }

func socketIn(dir string) string { return path.Join(holderHomeIn(dir), holderSocket) }

// serveScript: $1 the holder's hash, $2 the directories to look in; the
// rest are serve's arguments.
const serveScript = `h=$1 dirs=$2; shift 2
for d in $dirs; do
	t="${d%/}/.termgate"
	if [ -f "$t/holder-$h" ]; then exec "$t/holder-$h" serve --socket "$t/holder.sock" "$@"; fi
done
if command -v tar >/dev/null 2>&1; then echo "termgate: no holder; tar"; else echo "termgate: no holder; cat"; fi
exit 200`

// uploadScript: $1 the directory, $2 the holder's hash, $3 the temporary
// name, $4 tar or cat (what stdin is). It says "ready" before it reads
// stdin, once it could create the file there: a directory that is
// missing or read-only is refused before the upload is sent.
const uploadScript = `t="${1%/}/.termgate" h=$2 f="${1%/}/.termgate/$3"
umask 077
if ! { mkdir -p "$t" && : >"$f"; } 2>/dev/null; then
	echo "cannot write there (read-only or missing)"
	exit 3
fi
echo ready
if [ "$4" = tar ]; then
	tar -xmf - -C "$1" || { rm -f "$f"; exit 3; }
else
	cat >"$f" && chmod 700 "$f" || { rm -f "$f"; exit 3; }
fi
if ! "$f" version >/dev/null 2>&1; then
	rm -f "$f"
	echo "the holder does not run from $1 (mounted noexec?)" >&2
	exit 4
fi
mv -f "$f" "$t/holder-$h" || exit 3`

// listScript: $1 the directories; prints those with a holder socket.
const listScript = `for d in $1; do [ -S "${d%/}/.termgate/holder.sock" ] && echo "$d"; done; exit 0`

// attachScript: $1 the holder's hash, $2 the socket; says "termgate:
// attach" and bridges the exec to the holder there with this build's
// holder binary (uploaded next to it when missing: status noHolder).
const attachScript = `t="${2%/*}"
[ -f "$t/holder-$1" ] || { echo "termgate: no holder; $(command -v tar >/dev/null 2>&1 && echo tar || echo cat)"; exit 200; }
echo "termgate: attach"
exec "$t/holder-$1" attach "$2"`

// heldConfig is what a durable Backend holds sessions with.
type heldConfig struct {
	bin    *holderbin.Binary
	idle   time.Duration
	buffer int

	// cannot remembers why a container cannot host the holder (every
	// directory refused it): its later sessions skip the futile uploads.
	// worked remembers the directory the holder ran from, looked in
	// first next time. Both are keyed by instance ID (a restarted
	// container is a new instance) and bounded by maxRemembered.
	mu     sync.Mutex
	cannot map[string]string
	worked map[string]string
}

const maxRemembered = 4096

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

func (h *heldConfig) get(m *map[string]string, k string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return (*m)[k]
}

func (h *heldConfig) set(m *map[string]string, k, v string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if *m == nil || len(*m) >= maxRemembered {
		*m = map[string]string{} // only a cache
	}
	(*m)[k] = v
}

// dirsFor is holderDirs with the directory that worked before first.
func (h *heldConfig) dirsFor(instID string) []string {
	dirs := slices.Clone(holderDirs)
	if d := h.get(&h.worked, instID); d != "" {
		if i := slices.Index(dirs, d); i > 0 {
			dirs = append([]string{d}, slices.Delete(dirs, i, i+1)...)
		}
	}
	return dirs
}

// errCannotHold says why an instance cannot host the holder; Start then
// falls back to an ordinary session.
type errCannotHold struct{ why string }

func (e *errCannotHold) Error() string { return "the instance cannot host the holder: " + e.why }

// holderTar is the upload for `tar x`: the .termgate directory and the
// binary under a temporary name. Its entries belong to 0:0, which tar
// applies only when it runs as root (the exec's user then, whose files
// they should be); any other user owns what it extracts.
func holderTar(data []byte, staged string) []byte {
	var buf bytes.Buffer
	buf.Grow(len(data) + 4096)
	tw := tar.NewWriter(&buf)
	now := time.Now()
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: holderHome + "/", Mode: 0o700, ModTime: now})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: holderHome + "/" + staged, Mode: 0o700, Size: int64(len(data)), ModTime: now})
	_, _ = tw.Write(data)
	_ = tw.Close()
	return buf.Bytes()
}

// upload copies this build's holder into dir over an exec (mode "tar" or
// "cat", as the container allows) and checks that it runs there. A
// refusal by the container (read-only, missing, noexec) is an
// *errUploadRefused; anything else (the API server) is another error.
func (b *Backend) upload(ctx context.Context, t target, dir, mode string) error {
	staged := ".holder-" + b.held.bin.Hash + "." + randomSuffix()
	data := b.held.bin.Data
	if mode == "tar" {
		data = holderTar(data, staged)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	x, err := b.openExec(t, []string{"/bin/sh", "-c", uploadScript, "termgate-upload", dir, b.held.bin.Hash, staged, mode})
	if err != nil {
		return err
	}
	var drain sync.WaitGroup
	defer func() {
		x.Close()
		drain.Wait()
	}()
	stop := x.deadline(ctx)
	line, _ := x.r.ReadString('\n')
	if strings.TrimSpace(line) == "ready" {
		// Send the file and end stdin; the script's output is read on,
		// or the exec would block writing it.
		drain.Go(func() { _, _ = io.Copy(io.Discard, x.r) })
		if _, err := x.inW.Write(data); err == nil {
			x.inW.Close()
		}
		select {
		case <-x.done:
		case <-ctx.Done():
		}
		line = ""
	}
	stop()
	code, err := x.exit()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("copy the holder into %q: %w", t.pod, ctx.Err())
	case err != nil:
		return fmt.Errorf("copy the holder into %q: %w", t.pod, b.execErr(t, err))
	case code != 0:
		return &errUploadRefused{dir: dir, why: fmt.Sprintf("status %d: %s", code, strings.TrimSpace(line+stderrOf(x)))}
	}
	return nil
}

// errUploadRefused: the container refused the holder in dir.
type errUploadRefused struct{ dir, why string }

func (e *errUploadRefused) Error() string { return e.dir + ": " + e.why }

// installHolder uploads the holder into the first of dirs that takes it
// and runs it. All refusing is an *errCannotHold.
func (b *Backend) installHolder(ctx context.Context, t target, dirs []string, mode string) error {
	var why []string
	for _, dir := range dirs {
		err := b.upload(ctx, t, dir, mode)
		var refused *errUploadRefused
		switch {
		case err == nil:
			return nil
		case errors.As(err, &refused):
			why = append(why, refused.Error())
		default:
			return err
		}
	}
	return &errCannotHold{why: "no directory takes it and lets it run: " + strings.Join(why, "; ")}
}

// startHeld starts a holder for a new session and connects to it, with
// one exec when this build's holder is already in the container ("serve
// --attach": the status line, then the protocol), or connects to the
// holder a racing gateway just started (Held().Session says whose session
// it holds). An *errCannotHold means: use an ordinary session.
func (b *Backend) startHeld(ctx context.Context, inst sessions.Instance, t target, spec sessions.StartSpec, size sessions.Size, term string) (sessions.Process, error) {
	if why := b.held.get(&b.held.cannot, inst.ID); why != "" {
		return nil, &errCannotHold{why: why}
	}
	p, err := b.startHeldIn(ctx, inst, t, spec, size, term)
	if cannot := (*errCannotHold)(nil); errors.As(err, &cannot) {
		b.held.set(&b.held.cannot, inst.ID, cannot.why)
	}
	return p, err
}

func (b *Backend) startHeldIn(ctx context.Context, inst sessions.Instance, t target, spec sessions.StartSpec, size sessions.Size, term string) (sessions.Process, error) {
	dirs := b.held.dirsFor(inst.ID)
	args := []string{"--session", spec.SessionID, "--attach",
		"--idle", b.held.idle.String(), "--buffer", strconv.Itoa(b.held.buffer),
		"--cols", strconv.Itoa(size.Cols), "--rows", strconv.Itoa(size.Rows), "--env", "TERM=" + term, "--"}
	args = append(args, b.command(spec.Shell)...)
	cmd := append([]string{"/bin/sh", "-c", serveScript, "termgate-start", b.held.bin.Hash, strings.Join(dirs, " ")}, args...)
	for attempt := 0; ; attempt++ {
		x, line, err := b.execStatus(ctx, inst, t, cmd)
		if err != nil {
			return nil, fmt.Errorf("start the holder: %w", err)
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "holder":
			if _, err := strconv.Atoi(f[1]); err == nil {
				return b.started(ctx, inst, t, x, f[2])
			}
		case len(f) == 3 && f[0] == "already" && f[1] == "held":
			return b.started(ctx, inst, t, x, f[2])
		case strings.HasPrefix(line, "termgate: no holder; ") && attempt == 0:
			x.Close()
			mode := strings.TrimPrefix(line, "termgate: no holder; ")
			if err := b.installHolder(ctx, t, dirs, mode); err != nil {
				return nil, err
			}
			continue
		}
		code, xerr := x.exit() // before Close, which would end it as cancelled
		x.Close()
		msg := strings.TrimSpace(line + stderrOf(x))
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("start the holder in %q: %w", inst.Name, ctx.Err())
		case code == 126 || code == 127:
			// The shell could not run the binary it found (a directory
			// remounted noexec since): nothing this gateway can fix.
			return nil, &errCannotHold{why: fmt.Sprintf("its holder does not run (status %d: %s)", code, msg)}
		case xerr != nil && b.gone(context.WithoutCancel(ctx), t):
			return nil, fmt.Errorf("start the holder in %q: %w: %w", inst.Name, sessions.ErrNotFound, xerr)
		case xerr != nil:
			return nil, fmt.Errorf("start the holder in %q: %w", inst.Name, b.execErr(t, xerr))
		}
		if len(msg) > 512 {
			msg = msg[:512] + "..."
		}
		return nil, fmt.Errorf("the holder did not start in %q (status %d): %s", inst.Name, code, msg)
	}
}

// execStatus opens an exec and reads its first line (within dialTimeout).
// On a failure to read it, x is returned with the line read so far (the
// caller asks x why).
func (b *Backend) execStatus(ctx context.Context, inst sessions.Instance, t target, cmd []string) (*execConn, string, error) {
	x, err := b.openExec(t, cmd)
	if err != nil {
		return nil, "", err
	}
	stop := x.deadline(ctx)
	line, _ := x.r.ReadString('\n')
	stop()
	return x, strings.TrimSpace(line), nil
}

// started completes a start on x, whose holder listens on sock.
func (b *Backend) started(ctx context.Context, inst sessions.Instance, t target, x *execConn, sock string) (sessions.Process, error) {
	dir := path.Dir(path.Dir(sock))
	b.held.set(&b.held.worked, inst.ID, dir)
	// A Start is for an attaching client: counted from the hello on, so
	// a short idle timeout cannot reap the session before the registry
	// says so.
	p, err := b.handshake(ctx, inst, t, dir, x, 1)
	if err != nil {
		return nil, fmt.Errorf("start a held session in %q: %w", inst.Name, err)
	}
	return p, nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
