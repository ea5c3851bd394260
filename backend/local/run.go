package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// Run starts a one-off command as `sh -c LINE` in a session of its own
// (setsid), on a terminal of its own with cmd.TTY, else on pipes. Close
// kills every process of that session, as Kill does for a shell: a
// command's background and job-control jobs included.
func (b *Backend) Run(_ context.Context, inst sessions.Instance, rc remote.Command) (remote.Process, error) {
	if err := noLogins(rc.Login); err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", rc.Line)
	cmd.Dir = b.cfg.Dir
	cmd.Env = append(append(os.Environ(), rc.Env...), "TERMGATE_INSTANCE="+inst.Name)
	p := &runProc{killer: b.killer, exited: make(chan struct{}), errDone: make(chan struct{}), tty: rc.TTY}
	if rc.TTY {
		size := rc.Size
		if size.IsZero() {
			size = sessions.DefaultSize
		}
		if !size.Valid() {
			return nil, fmt.Errorf("run in %q: %dx%d: %w", inst.Name, size.Cols, size.Rows, sessions.ErrBadSize)
		}
		term := rc.Term
		if term == "" {
			term = "xterm-256color"
		}
		cmd.Env = append(cmd.Env, "TERM="+term)
		ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(size.Cols), Rows: uint16(size.Rows)})
		if err != nil {
			return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
		}
		if ptmx, err = pollable(ptmx); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, err
		}
		p.out, p.in = ptmx, ptmx
	} else if err := p.startPiped(cmd, rc.Stderr); err != nil {
		return nil, fmt.Errorf("run in %q: %w", inst.Name, err)
	}
	p.cmd = cmd
	go p.wait() // owned by the process: ends when it is reaped
	return p, nil
}

// startPiped starts cmd in a session of its own on pipes; stderr's are
// copied to w by a goroutine of the process's (Close waits for it).
func (p *runProc) startPiped(cmd *exec.Cmd, w io.Writer) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return err
	}
	// *os.File ends: os/exec starts no copying goroutine, so a job that
	// keeps a descriptor open never holds up the reaping.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	closeAll(inR, outW, errW) // the child's ends
	if err != nil {
		closeAll(inW, outR, errR)
		return err
	}
	p.in, p.out, p.errR = inW, outR, errR
	if w == nil {
		w = io.Discard
	}
	w = exechost.KeepWriting(w)
	p.wg.Go(func() { p.copyStderr(w) })
	return nil
}

// copyStderr copies stderr to w until its end, or, once the command
// exited, drainGrace without output (a job it left may hold it open), as
// Read does for stdout. Wait waits for it: the client must have all of
// stderr before the exit status.
func (p *runProc) copyStderr(w io.Writer) {
	defer close(p.errDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.errR.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		select {
		case <-p.exited:
			_ = p.errR.SetReadDeadline(time.Now().Add(drainGrace))
		default:
		}
		if err != nil {
			return
		}
	}
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// runProc is a running command.
type runProc struct {
	cmd    *exec.Cmd
	killer *killer
	tty    bool
	in     *os.File // stdin (the terminal with a TTY)
	out    *os.File // stdout (the terminal with a TTY)
	errR   *os.File // stderr's read end; nil with a TTY
	wg     sync.WaitGroup

	exited  chan struct{} // closed once reaped; exit set before
	exit    remote.Exit
	errDone chan struct{} // closed when copyStderr ends (never with a TTY)

	wmu    sync.Mutex // guards inDone
	inDone bool       // stdin was closed
	once   sync.Once
	err    error // Close's
}

func (p *runProc) wait() {
	_ = waitExit(p.cmd)
	st := p.cmd.ProcessState
	p.exit = remote.Exit{Code: st.ExitCode()}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.exit.Code = 128 + int(ws.Signal())
		p.exit.Signal = strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG")
	}
	close(p.exited)
	// A job left behind may hold the output open: what it writes within
	// drainGrace is still read, then Read ends.
	_ = p.out.SetReadDeadline(time.Now().Add(drainGrace))
	if p.errR != nil {
		_ = p.errR.SetReadDeadline(time.Now().Add(drainGrace))
	}
}

// Read returns the output; io.EOF at its end: the terminal's EIO, the
// pipe's EOF, or, once the command exited, drainGrace without output (a
// job it left may hold the output open). The grace restarts with each
// read, so output still buffered when a slow client reads is not lost.
func (p *runProc) Read(b []byte) (int, error) {
	n, err := p.out.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		_ = p.out.SetReadDeadline(time.Now().Add(drainGrace))
		n, err = p.out.Read(b)
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.EIO), errors.Is(err, os.ErrClosed):
		return n, io.EOF
	}
	return n, err
}

func (p *runProc) Write(b []byte) (int, error) { return p.in.Write(b) }

// CloseWrite ends stdin. A terminal has no end of input of its own (as
// with OpenSSH's sshd, the client's EOF changes nothing there).
func (p *runProc) CloseWrite() error {
	if p.tty {
		return nil
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.inDone {
		return nil
	}
	p.inDone = true
	return p.in.Close()
}

func (p *runProc) Resize(_ context.Context, size sessions.Size) error {
	if !p.tty {
		return nil
	}
	if !size.Valid() {
		return sessions.ErrBadSize
	}
	return pty.Setsize(p.out, &pty.Winsize{Cols: uint16(size.Cols), Rows: uint16(size.Rows)})
}

func (p *runProc) Wait(ctx context.Context) (remote.Exit, error) {
	select {
	case <-p.exited:
	case <-ctx.Done():
		return remote.Exit{}, ctx.Err()
	}
	if p.tty {
		return p.exit, nil
	}
	select {
	case <-p.errDone:
		return p.exit, nil
	case <-ctx.Done():
		return remote.Exit{}, ctx.Err()
	}
}

// Close kills every process of the command's session (after a normal exit:
// the jobs it left), closes its descriptors and waits for its goroutines.
func (p *runProc) Close() error {
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.killer.kill(ctx, p.cmd.Process.Pid); err != nil {
			p.err = fmt.Errorf("processes of command %d still running: %w", p.cmd.Process.Pid, err)
		}
		select {
		case <-p.exited:
		case <-ctx.Done():
		}
		_ = p.out.Close()
		if !p.tty {
			_ = p.CloseWrite()
			_ = p.errR.Close()
		}
		p.wg.Wait()
	})
	return p.err
}
