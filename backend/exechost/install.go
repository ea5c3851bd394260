package exechost

import (
	"archive/tar"
	"bufio"
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
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions: the holder (cmd/termgate-holder) is uploaded into the
// instance and runs there as a daemon, one per instance, at a socket in
// the first of the backend's HolderDirs where the upload lands and the
// binary runs. A directory that refuses the upload, or where the binary
// does not run (noexec), is skipped for the next.

// heldConfig is what a durable Host holds sessions with.
type heldConfig struct {
	*holderSite // the Host's: the binary and where it runs
	idle        time.Duration
	buffer      int
	secret      []byte // the deployment's (Config.HolderSecret)

	// foreign remembers, by instance ID and directory, where another
	// deployment's holder was met (deployment.go); under holderSite.mu.
	foreign map[string]string
}

// holderSite is what every Host, durable or not, runs this build's holder
// binary with: its sessions and its tools (tool.go) alike.
type holderSite struct {
	given *holderbin.Binary // Config.Holder; nil: holderbin.Load()
	load  sync.Once
	bin   *holderbin.Binary
	err   error

	// cannot remembers why an instance cannot run the holder (a
	// read-only root filesystem and noexec mounts are fixed for its
	// life): its later sessions and tools skip the futile uploads. worked
	// remembers the directory the holder ran from, tried first next time:
	// a directory that fails keeps its upload (not every backend can
	// remove a file), so it is tried once per instance, not per session.
	// Both are keyed by instance ID (a restarted container is a new
	// instance).
	// shell remembers whether an instance has /bin/sh ("yes", "no"):
	// tools run without launchScript where it has none (tool.go).
	mu     sync.Mutex
	cannot map[string]string
	worked map[string]string
	shell  map[string]string
}

// binary is the holder binary, loaded on first use (a Host that is not
// durable needs it only once a tool runs).
func (c *holderSite) binary() (*holderbin.Binary, error) {
	c.load.Do(func() {
		c.bin = c.given
		if c.bin == nil {
			c.bin, c.err = holderbin.Load()
		}
	})
	return c.bin, c.err
}

// maxRemembered bounds the caches (cleared when full).
const maxRemembered = 4096

func newHeldConfig(cfg Config, site *holderSite) (*heldConfig, error) {
	if len(cfg.HolderSecret) < holder.KeyLen {
		return nil, fmt.Errorf("durable sessions need the deployment's holder secret (%d bytes or more, derived from the host key), got %d bytes", holder.KeyLen, len(cfg.HolderSecret))
	}
	if _, err := site.binary(); err != nil {
		return nil, err
	}
	h := &heldConfig{holderSite: site, idle: cfg.IdleTimeout, buffer: cfg.BufferSize, secret: append([]byte(nil), cfg.HolderSecret...)}
	if h.idle <= 0 {
		h.idle = 30 * time.Minute
	}
	if h.buffer < sessions.MinBufferSize {
		h.buffer = 64 << 10
	}
	return h, nil
}

func (c *holderSite) get(m *map[string]string, k string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (*m)[k]
}

func (c *holderSite) set(m *map[string]string, k, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil || len(*m) >= maxRemembered {
		*m = map[string]string{} // only a cache
	}
	(*m)[k] = v
}

// HolderTar is an upload as a tar stream, for backends that take one: the
// directory dir (a base name, created 0700) and the file name in it,
// owned by uid:gid.
func HolderTar(data []byte, dir, name string, uid, gid int) []byte {
	var buf bytes.Buffer
	buf.Grow(len(data) + 4096)
	tw := tar.NewWriter(&buf)
	now := time.Now()
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o700, ModTime: now, Uid: uid, Gid: gid})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dir + "/" + name, Mode: 0o700, Size: int64(len(data)), ModTime: now, Uid: uid, Gid: gid})
	_, _ = tw.Write(data)
	_ = tw.Close()
	return buf.Bytes()
}

// The instance is untrusted, its unprivileged users included, and the
// holder's directories are ones they can write (/tmp): a .termgate
// directory, a holder-HASH binary or a socket they planted must never be
// run or connected to (the hash is no secret: any holder's command line
// shows it). So the binary is never run by its path alone: launchScript
// runs it only once the directory it is in, entered so that it cannot be
// swapped (cd, then pwd -P), and the file itself are the exec user's and
// no links, refusing (status 3, "cannot hold here") otherwise; the holder
// then checks what a shell cannot portably (modes, every entry of its
// directory, the parent's sticky bit, the socket listener's uid:
// holder.CheckHome). An upload goes into a fresh directory of its own
// (uploadPrefix, never an existing one: an upload into a planted
// .termgate would make it the exec user's, the planted entries and all),
// from which the holder installs itself into .termgate (--install-as),
// creating it or checking it. Only test, cd, pwd and exec are used:
// builtins of dash and busybox sh alike.
//
// $1 is the candidate directory, $2 the binary's path under it
// (.termgate/holder-HASH, or UPLOAD/holder); the rest is the holder's
// command line.
const launchScript = `d=$1 b=$2
shift 2
refuse() { echo "termgate-holder: cannot hold here: $*" >&2; exit 3; }
cd -P -- "$d" 2>/dev/null || refuse "no directory $d"
p=$(pwd -P)
h=${b%/*} f=${b##*/}
[ -d "$h" ] && [ ! -L "$h" ] || refuse "$d/$h is not a directory"
cd -- "$h" 2>/dev/null && [ "$(pwd -P)" = "${p%/}/$h" ] || refuse "$d/$h is a link or moved"
[ -O . ] || refuse "$d/$h is not this user's"
[ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] || refuse "$d/$b is not a file of this user's"
exec "./$f" "$@"`

// uploadPrefix starts the name of an upload's fresh directory. The holder
// run from it removes it: once installed (--install-as), and also when it
// exits without installing (a refused holder directory), so refusals leave
// no copy behind. Only an upload that never ran (noexec) stays, and the
// caches keep that to one per instance.
const uploadPrefix = ".termgate-upload-"

// holderCommand returns the command that runs this build's holder in dir
// (through launchScript), uploading it first into a fresh directory when
// it is not there yet (install is then where the holder installs itself:
// --install-as, a rename, so a gateway racing this one never runs a
// half-written file).
func (h *Host) holderCommand(ctx context.Context, inst sessions.Instance, dir string) (cmd []string, install string, err error) {
	hb, err := h.site.binary()
	if err != nil {
		return nil, "", err
	}
	bin := binaryIn(dir, hb.Hash)
	have, err := h.x.Exists(ctx, inst, []string{bin})
	if err != nil {
		return nil, "", err
	}
	rel := holderHome + "/holder-" + hb.Hash
	if !have[0] {
		up := uploadPrefix + randomSuffix()
		if err := h.x.Upload(ctx, inst, path.Join(dir, up), "holder", hb.Data); err != nil {
			return nil, "", err
		}
		rel, install = up+"/holder", bin
	}
	return []string{"/bin/sh", "-c", launchScript, "termgate-holder", dir, rel}, install, nil
}

// holderDirs are the backend's HolderDirs for inst, the one the holder
// last ran from first (sessions and tools alike).
func (h *Host) holderDirs(ctx context.Context, inst sessions.Instance) ([]string, error) {
	dirs, err := h.x.HolderDirs(ctx, inst)
	if err != nil {
		return nil, err
	}
	if d := h.site.get(&h.site.worked, inst.ID); d != "" {
		if i := slices.Index(dirs, d); i > 0 {
			dirs = append([]string{d}, slices.Delete(slices.Clone(dirs), i, i+1)...)
		}
	}
	return dirs, nil
}

// startHeld installs the holder where it runs, starts it for a new session
// and connects to it, all with one exec ("serve --attach": the status
// line, then the protocol), or connects to the holder a racing gateway just
// started. The session it holds may be the racer's (Held().Session says
// which). A *CannotHold means: use an ordinary session.
func (h *Host) startHeld(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec, sh shellSpec) (sessions.Process, error) {
	if why := h.held.get(&h.held.cannot, inst.ID); why != "" {
		return nil, &CannotHold{Why: why}
	}
	p, err := h.startHeldIn(ctx, inst, spec, sh)
	if cannot := (*CannotHold)(nil); errors.As(err, &cannot) && !cannot.passing {
		h.held.set(&h.held.cannot, inst.ID, cannot.Why)
	}
	return p, err
}

func (h *Host) startHeldIn(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec, sh shellSpec) (sessions.Process, error) {
	dirs, err := h.holderDirs(ctx, inst)
	if err != nil {
		return nil, err
	}
	var why []string
	foreign := false
	for _, dir := range dirs {
		run, install, err := h.holderCommand(ctx, inst, dir)
		var cannot *CannotHold
		switch {
		case errors.As(err, &cannot) || err != nil && (ctx.Err() != nil || !errors.Is(err, ErrRefused)):
			return nil, err
		case err != nil:
			why = append(why, err.Error())
			continue
		}
		cmd := append(run, "serve", "--key-stdin", "--socket", SocketFor(dir, spec.Name), "--session", spec.SessionID, "--attach",
			"--idle", h.held.idle.String(), "--buffer", strconv.Itoa(h.held.buffer),
			"--cols", strconv.Itoa(sh.size.Cols), "--rows", strconv.Itoa(sh.size.Rows), "--env", "TERM="+sh.term)
		for _, kv := range clientEnv(spec.Env) {
			cmd = append(cmd, "--env", kv)
		}
		if sh.agentSock != "" { // the holder sets it per session: a reset's shell gets its own
			cmd = append(cmd, "--agent-socket")
		}
		if install != "" {
			cmd = append(cmd, "--install-as", install)
		}
		if spec.Login != "" {
			cmd = append(cmd, "--login", spec.Login)
		}
		cmd = append(append(cmd, "--"), h.command(spec.Shell)...)
		x, err := h.openExec(ctx, inst, cmd)
		if err != nil {
			return nil, fmt.Errorf("start the holder: %w", err)
		}
		// The key first, on stdin: never in the command line, which the
		// instance's users can read. A failed write (the exec refused
		// at once) shows in the status line and the exit below.
		_, _ = x.Write(holder.KeyLine(h.held.key(inst)))
		stop := x.deadline(ctx)
		line, lerr := x.r.ReadString('\n')
		stop()
		res := execResult{Stdout: line}
		if lerr != nil || !strings.HasPrefix(line, "holder ") && !strings.HasPrefix(line, "already held ") {
			// The exec failed (or hangs): how?
			if ctx.Err() != nil {
				x.shutdown()
				return nil, fmt.Errorf("start the holder in %q: %w", inst.Name, ctx.Err())
			}
			code, werr := x.exit()
			res.Code, res.Stderr = code, x.s.Stderr()
			x.shutdown()
			if errors.Is(werr, ErrNoStatus) { // the exec itself failed
				if h.gone(context.WithoutCancel(ctx), inst) {
					return nil, fmt.Errorf("start the holder in %q: %w: %w", inst.Name, sessions.ErrNotFound, werr)
				}
				return nil, fmt.Errorf("start the holder in %q: %w", inst.Name, werr)
			}
		}
		outcome, err := parseServe(res, SocketFor(dir, spec.Name))
		if err != nil {
			if _, crashed := goCrash(res.Stderr); crashed {
				h.log.Debug(h.name+": the holder's crash output", "instance", inst.Name, "output", res.Stderr)
			}
			x.shutdown()
			return nil, fmt.Errorf("in %q: %w", inst.Name, err)
		}
		if outcome == serveCannot {
			msg := strings.TrimSpace(res.Stdout + " " + res.Stderr)
			if res.Code == holder.ExitUntrusted {
				h.log.Warn(h.name+": refused a holder directory that is not the exec user's alone; trying the next",
					"instance", inst.Name, "dir", dir, "why", msg)
			}
			why = append(why, fmt.Sprintf("%s: %s", dir, msg))
			continue
		}
		// A Start is for an attaching client: counted from the hello on,
		// so a short idle timeout cannot reap the session before the
		// registry says so.
		p, err := h.handshake(ctx, inst, dir, spec.Name, x, 1)
		if errors.Is(err, errUntrusted) || errors.Is(err, ErrForeign) {
			// Not ours to use (another user's directory, or a live
			// holder of another deployment): hold it elsewhere.
			foreign = foreign || errors.Is(err, ErrForeign)
			why = append(why, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		if err != nil {
			return h.heldStartFailed(ctx, inst, outcome, dir, spec.Name, err)
		}
		h.held.set(&h.held.worked, inst.ID, dir)
		return p, nil
	}
	return nil, &CannotHold{Why: "no writable directory lets it run: " + strings.Join(why, "; "), passing: foreign}
}

// execResult is what a start exec printed, and its status when it ended.
type execResult struct {
	Stdout, Stderr string
	Code           int
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
	case r.Code == holder.ExitUntrusted && strings.Contains(r.Stderr, "cannot hold here"):
		// launchScript or the holder refused the directory: another
		// user's (see launchScript).
		return serveCannot, nil
	case r.Code == 126 || r.Code == 127:
		// The runtime could not run the file (runc says "exec failed:
		// ... permission denied" or "no such file", a shell says so with
		// these statuses); the holder itself never exits so.
		return serveCannot, nil
	}
	return serveCannot, serveFailed(r)
}

// dialTimeout bounds the status line, the hello and the replay of a
// connection, so a holder that does not answer cannot hang a Start or an
// Adopt.
const dialTimeout = 15 * time.Second

// execConn is a non-TTY exec carrying a byte stream (a status line, then
// the holder protocol), as holder.Dial sees it.
type execConn struct {
	s Stream
	r *bufio.Reader // over s, so a status line can be read off the front
	// keepOpen makes Close a no-op during a handshake, whose failure
	// must first read why from the ended exec's stderr.
	keepOpen atomic.Bool
	once     sync.Once
}

func (h *Host) openExec(ctx context.Context, inst sessions.Instance, argv []string) (*execConn, error) {
	s, err := h.x.Exec(ctx, inst, argv, ExecOptions{Stdin: true})
	if err != nil {
		return nil, err
	}
	return &execConn{s: s, r: bufio.NewReaderSize(s, 64<<10)}, nil
}

func (x *execConn) Read(p []byte) (int, error)  { return x.r.Read(p) }
func (x *execConn) Write(p []byte) (int, error) { return x.s.Write(p) }

// Close drops the stream (the program in the instance sees its stdin end).
func (x *execConn) Close() error {
	if !x.keepOpen.Load() {
		x.shutdown()
	}
	return nil
}

func (x *execConn) shutdown() { x.once.Do(func() { _ = x.s.Close() }) }

// exit waits (at most a second) for the exec to end and returns its exit
// status, or -1 and why not.
func (x *execConn) exit() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return x.s.Wait(ctx)
}

// deadline bounds a handshake on x: dialTimeout, or ctx's deadline when
// sooner, and ctx's cancellation drop x. The returned stop lifts both.
func (x *execConn) deadline(ctx context.Context) (stop func()) {
	d := dialTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	t := time.AfterFunc(d, x.shutdown)
	stopCtx := context.AfterFunc(ctx, x.shutdown)
	return func() {
		t.Stop()
		stopCtx()
	}
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
