package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/termgate/termgate/backend/procmark"
)

// sweepMode is what Sweep ends: this gateway's shells when it has an id.
func (b *Backend) sweepMode() string {
	if b.gatewayID == "" {
		return procmark.AllSessions
	}
	return procmark.PrefixMode(b.gatewayID + ".")
}

// killTimeout bounds the cleanup Start does on its own.
const killTimeout = 10 * time.Second

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

// killMarked runs procmark.KillScript in the container for modes (one or more
// markers, or one --prefix= or --all). A container that is gone or stopped
// has nothing left to kill: that is not an error. An engine that cannot be
// reached is (an *UnreachableError): the processes may well live on.
func (b *Backend) killMarked(ctx context.Context, containerID string, modes ...string) ([]procmark.Ended, error) {
	created, err := b.cli.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          append([]string{"/bin/sh", "-c", procmark.KillScript, "termgate-kill"}, modes...),
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
	procs := procmark.ParseEnded(stdout.String())
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

func (b *Backend) logSwept(name string, procs []procmark.Ended) {
	if len(procs) == 0 {
		return
	}
	sessionIDs, pids := procmark.Summary(procs)
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
