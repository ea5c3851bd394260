package holder

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The terminal's master end on the runtime's poller. creack/pty sets the
// window size through File.Fd, which puts the file in blocking mode: every
// read of the shell's output and every write of a keystroke then holds a
// thread in a blocking system call, and the goroutine that handles the
// data can run only once the runtime notices the thread is back (the
// durable path's echo paid for it in make bench). Closing a pollable file
// also interrupts a read in progress.

// pollable returns f's descriptor as a non-blocking, pollable file, and
// closes f; on an error f is left as it was.
func pollable(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("holder: dup the terminal: %w", derr)
	}
	if err := syscall.SetNonblock(nfd, true); err != nil {
		_ = syscall.Close(nfd)
		return nil, fmt.Errorf("holder: terminal non-blocking: %w", err)
	}
	_ = f.Close()
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

// setSize sets the terminal's window size without File.Fd (which would
// make it blocking again).
func setSize(f *os.File, cols, rows int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	}); err != nil {
		return err
	}
	return ierr
}

// moreAfter is the size of a read of the terminal after which more output
// may be waiting: the kernel hands a terminal's output over in chunks of
// about 4 KiB.
const moreAfter = 2 << 10

// more appends to buf[:n] what output is waiting already, without waiting
// for more, and returns the new length: one frame, one write to each
// gateway's stream (and one trip through the engine) for what would be
// up to eight. A read that found less than moreAfter, such as a
// keystroke's echo, is sent at once.
func (s *shell) more(buf []byte, n int) int {
	if !s.nonblock {
		return n
	}
	rc, err := s.pty.SyscallConn()
	if err != nil {
		return n
	}
	last := n
	for last >= moreAfter && len(buf)-n >= moreAfter {
		last = 0
		_ = rc.Read(func(fd uintptr) bool {
			m, err := syscall.Read(int(fd), buf[n:])
			if err == nil && m > 0 {
				last = m
			}
			return true // never wait: a later Read reports errors
		})
		n += last
	}
	return n
}
