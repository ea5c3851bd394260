package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// killScript ends marked processes. It runs as `sh -c killScript
// termgate-kill MODE...` in a non-TTY exec, where MODE is one or more
// session markers (the processes whose environment holds
// TERMGATE_SESSION=MARKER for any of them), --prefix=P (any marker starting
// with P: one gateway's shells) or --all (any TERMGATE_SESSION). MODE is only
// ever compared, never expanded as code.
//
// Each marked process is SIGKILLed, and so is every process in its session
// (field 6 of /proc/PID/stat): a TTY exec is a session leader, and job
// control puts background jobs in their own process groups of that session,
// while `setsid` jobs keep the marker. Processes marked TERMGATE_HELD=1
// belong to a holder's session (durable sessions), which outlives gateways
// on purpose: they are never matched. It never touches PID 1, PID 1's
// session, itself or its own session, and skips zombies. Rounds repeat while
// they find something, to catch processes forked meanwhile.
//
// The stat fields are read after the LAST ')' of the whole file: the command
// name (comm) between the parentheses is the process's to choose and may
// hold ')', spaces and newlines, so the first line or the first ')' would let
// a process pose as a zombie (escaping its reset) or as a member of another
// session (getting that session killed).
//
// Only sh builtins, /proc and tr are needed (busybox, dash and bash all run
// it). It prints "killed PID MARK COMM" per signal sent (MARK is "-" for an
// unmarked session member; COMM is cut at its first newline).
const killScript = `
IFS=' 	
'
wants=" $* "
self=$$
nl='
'
stat_of() {
	_l=
	_x=
	{ while IFS= read -r _x; do _l="$_l$_x$nl"; _x=; done; } 2>/dev/null <"/proc/$1/stat"
	_l="$_l$_x"
	case $_l in
	*\)*) ;;
	*) return 1 ;;
	esac
	st_comm=${_l#*\(}
	st_comm=${st_comm%\)*}
	st_comm=${st_comm%%"$nl"*}
	set -- ${_l##*\)}
	st_state=$1
	st_sid=$4
	[ -n "$st_sid" ]
}
mark_of() {
	_e="$nl$(tr '\0' '\n' 2>/dev/null <"/proc/$1/environ")$nl" || return 1
	case $_e in
	*"${nl}TERMGATE_SESSION="*) ;;
	*) return 1 ;;
	esac
	case $_e in
	*"${nl}TERMGATE_HELD=1${nl}"*) return 1 ;;
	esac
	mk=${_e#*"${nl}TERMGATE_SESSION="}
	mk=${mk%%"$nl"*}
	case $mk in
	''|*[!A-Za-z0-9_.-]*) return 1 ;;
	esac
}
matches() {
	case $wants in
	" --all ") return 0 ;;
	" --prefix="*)
		_p=${wants# --prefix=}
		case $mk in
		"${_p% }"*) return 0 ;;
		esac
		return 1 ;;
	*" $mk "*) return 0 ;;
	esac
	return 1
}
stat_of "$self" || exit 1
self_sid=$st_sid
init_sid=none
stat_of 1 && init_sid=$st_sid
round=0
found=1
while [ "$found" = 1 ] && [ "$round" -lt 8 ]; do
	round=$((round + 1))
	found=0
	sids=' '
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		case $p in 1|"$self") continue ;; esac
		stat_of "$p" || continue
		[ "$st_state" = Z ] && continue
		[ "$st_sid" = "$self_sid" ] && [ "$self_sid" != 0 ] && continue
		mark_of "$p" || continue
		matches || continue
		case $st_sid in
		0|"$self_sid"|"$init_sid") ;;
		*) sids="$sids$st_sid " ;;
		esac
		kill -9 "$p" 2>/dev/null && found=1 && echo "killed $p $mk $st_comm"
	done
	[ "$sids" = ' ' ] && continue
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		case $p in 1|"$self") continue ;; esac
		stat_of "$p" || continue
		[ "$st_state" = Z ] && continue
		case $sids in
		*" $st_sid "*) ;;
		*) continue ;;
		esac
		kill -9 "$p" 2>/dev/null && found=1 && echo "killed $p - $st_comm"
	done
done
exit 0
`

// allSessions is killScript's MODE for every marker (Sweep without a
// gateway id).
const allSessions = "--all"

// sweepMode is what Sweep ends: this gateway's shells when it has an id.
func (b *Backend) sweepMode() string {
	if b.gatewayID == "" {
		return allSessions
	}
	return "--prefix=" + b.gatewayID + "."
}

// killTimeout bounds the cleanup Start does on its own.
const killTimeout = 10 * time.Second

// ended is one process killScript signalled.
type ended struct {
	PID     int
	Session string // "" for an unmarked member of a marked session
	Comm    string
}

// Kill ends the shell and every process of its session, background and
// setsid jobs included, then releases the stream. It is idempotent, and
// quick when the container is gone (then there is nothing left to kill).
// When the engine cannot be reached it fails with an error wrapping
// ErrEngineUnreachable: with dockerd --live-restore the processes live on,
// so the caller must call Kill again until it succeeds.
func (p *process) Kill(ctx context.Context) error {
	p.kmu.Lock()
	defer p.kmu.Unlock()
	if p.killed {
		return nil
	}
	p.ending.Store(true)
	procs, err := p.b.killGrouped(ctx, p.container, p.session)
	if err == nil {
		err = p.waitEnded(ctx)
	}
	p.close()
	if err != nil {
		return fmt.Errorf("kill shell in %q: %w", p.name, err)
	}
	p.killed = true
	p.b.log.Debug("docker: killed session", "instance", p.name, "session", p.session, "processes", len(procs))
	return nil
}

// waitEnded checks that the engine sees the exec end, for at most a second.
func (p *process) waitEnded(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := p.Wait(wctx)
	switch {
	case err == nil || cerrdefs.IsNotFound(err):
		return nil
	case ctx.Err() == nil && wctx.Err() != nil:
		return fmt.Errorf("the shell still runs after SIGKILL (did it change user?)")
	}
	return err
}

// killMarked runs killScript in the container for modes (one or more
// markers, or one --prefix= or --all). A container that is gone or stopped
// has nothing left to kill: that is not an error. An engine that cannot be
// reached is (an *UnreachableError): the processes may well live on.
func (b *Backend) killMarked(ctx context.Context, containerID string, modes ...string) ([]ended, error) {
	created, err := b.cli.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          append([]string{"/bin/sh", "-c", killScript, "termgate-kill"}, modes...),
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
			return nil, b.checkGone(ctx, containerID, err)
		}
		return nil, b.engineErr("create kill exec", err)
	}
	hr, err := b.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, b.engineErr("start kill exec", err)
	}
	stop := closeOnDone(ctx, hr.Conn)
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&limitWriter{w: &stdout, n: 1 << 20}, &limitWriter{w: &stderr, n: 4 << 10}, hr.Reader)
	stop()
	hr.Close()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("kill exec: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("read kill exec output: %w", err)
	}
	procs := parseEnded(stdout.String())
	info, err := b.cli.ContainerExecInspect(ctx, created.ID)
	if err != nil {
		return procs, b.engineErr("inspect kill exec", err)
	}
	if !info.Running && info.ExitCode != 0 {
		if gone := b.checkGone(ctx, containerID, nil); gone == nil {
			return procs, nil // the container stopped under the script
		}
		return procs, fmt.Errorf("kill script exited with status %d: %s", info.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return procs, nil
}

// checkGone returns nil when the container no longer runs (nothing to
// kill), else an error explaining why the kill exec could not run.
func (b *Backend) checkGone(ctx context.Context, containerID string, cause error) error {
	info, err := b.cli.ContainerInspect(ctx, containerID)
	switch {
	case cerrdefs.IsNotFound(err):
		return nil
	case err != nil:
		return b.engineErr("inspect container", err)
	case info.State == nil || !info.State.Running:
		return nil
	case info.State.Paused:
		return fmt.Errorf("container is paused; its shells could not be killed")
	case cause != nil:
		return fmt.Errorf("create kill exec: %w", cause)
	}
	return fmt.Errorf("container still running")
}

func parseEnded(out string) []ended {
	var procs []ended
	seen := map[int]bool{}
	for line := range strings.Lines(out) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), " ", 4)
		if len(f) < 3 || f[0] != "killed" {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || seen[pid] {
			continue
		}
		seen[pid] = true
		e := ended{PID: pid}
		if f[2] != "-" {
			e.Session = f[2]
		}
		if len(f) == 4 {
			e.Comm = f[3]
		}
		procs = append(procs, e)
	}
	return procs
}

// Sweep ends the marked shells (and their sessions' processes) in every
// running instance: with the exec streams of an earlier gateway run gone,
// nothing else would ever end them. Paused containers are skipped.
func (b *Backend) Sweep(ctx context.Context) error {
	list, err := b.cli.ContainerList(ctx, container.ListOptions{Filters: b.listFilters()})
	if err != nil {
		return b.engineErr("list containers", err)
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	for _, c := range list {
		if b.isSelf(c.ID) {
			continue
		}
		name := c.ID[:min(12, len(c.ID))]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			procs, err := b.killMarked(ctx, c.ID, b.sweepMode())
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("sweep %q: %w", name, err))
				mu.Unlock()
				return
			}
			b.logSwept(name, procs)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *Backend) logSwept(name string, procs []ended) {
	if len(procs) == 0 {
		return
	}
	var sessionIDs, pids []string
	seen := map[string]bool{}
	for _, p := range procs {
		pids = append(pids, strconv.Itoa(p.PID)+"/"+p.Comm)
		if p.Session != "" && !seen[p.Session] {
			seen[p.Session] = true
			sessionIDs = append(sessionIDs, p.Session)
		}
	}
	b.log.Info("docker: sweep ended shells left by an earlier run",
		"instance", name, "sessions", sessionIDs, "processes", pids)
}

// closeOnDone closes c when ctx is done; the returned stop ends and waits
// for the watcher.
func closeOnDone(ctx context.Context, c io.Closer) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			_ = c.Close()
		case <-done:
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// limitWriter keeps the first n bytes and discards the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		l.n -= k
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
