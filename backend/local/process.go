package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/termgate/termgate/sessions"
	"golang.org/x/sys/unix"
)

// drainGrace is how long output is still read after the shell exited; a
// background job holding the terminal open would otherwise keep Read blocked.
const drainGrace = 100 * time.Millisecond

type process struct {
	cmd    *exec.Cmd
	ptmx   *os.File
	killer *killer
	exited chan struct{} // closed once the shell exited and was reaped
	code   int           // set before exited is closed
	kill   sync.Once
	// killErr is set within kill and read after it.
	killErr error
	killing atomic.Bool // Kill started: the end of the terminal is its
}

// reapWait bounds how long Read waits, once the terminal ended, for the
// shell to be reaped (the end of the terminal comes first by a moment).
const reapWait = 5 * time.Second

func startProcess(cmd *exec.Cmd, size sessions.Size, k *killer) (*process, error) {
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(size.Cols), Rows: uint16(size.Rows)})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	if ptmx, err = pollable(ptmx); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	p := &process{cmd: cmd, ptmx: ptmx, killer: k, exited: make(chan struct{})}
	go func() { // owned by the process: ends when the shell does
		_ = waitExit(cmd)
		p.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = 128 + int(ws.Signal())
		}
		close(p.exited)
		_ = ptmx.SetReadDeadline(time.Now().Add(drainGrace))
	}()
	return p, nil
}

// Read returns the terminal's output; once the shell exited, it ends with
// its exit status (a *sessions.ExitError; killed by a signal: 128+signal),
// or io.EOF after Kill.
func (p *process) Read(b []byte) (int, error) {
	n, err := p.ptmx.Read(b)
	if err == nil || !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		return n, err
	}
	if p.killing.Load() {
		return n, io.EOF
	}
	t := time.NewTimer(reapWait)
	defer t.Stop()
	select {
	case <-p.exited:
		return n, &sessions.ExitError{Code: p.code}
	case <-t.C:
		return n, io.EOF
	}
}

func (p *process) Write(b []byte) (int, error) { return p.ptmx.Write(b) }

func (p *process) Resize(_ context.Context, size sessions.Size) error {
	return pty.Setsize(p.ptmx, &pty.Winsize{Cols: uint16(size.Cols), Rows: uint16(size.Rows)})
}

func (p *process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.exited:
		return p.code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Kill kills every process in the shell's session (job-control jobs have
// process groups of their own, so a group kill would miss them), then
// closes the terminal. The killer walks /proc for every session being
// killed at once, and returns only when none of this session's processes
// is left running.
func (p *process) Kill(ctx context.Context) error {
	p.killing.Store(true)
	p.kill.Do(func() {
		if err := p.killer.kill(ctx, p.cmd.Process.Pid); err != nil {
			p.killErr = fmt.Errorf("processes of shell %d still running: %w", p.cmd.Process.Pid, err)
		}
		_ = p.ptmx.Close()
	})
	if p.killErr != nil {
		return p.killErr
	}
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shell %d did not exit: %w", p.cmd.Process.Pid, ctx.Err())
	}
}

// pollable returns a non-blocking, close-on-exec duplicate of f, so that
// read deadlines and Close interrupt a blocked Read: pty.Start calls Fd(),
// which puts the original into blocking mode for good. Close-on-exec is set
// atomically with the duplicate (F_DUPFD_CLOEXEC): a plain dup would be
// inherited by every shell started later, and each of them could type into
// this session's terminal (issue 9 item 0).
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup pty: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("pty non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
