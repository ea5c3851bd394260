package local

import (
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// waitExit waits for the shell to exit and reaps it without holding an OS
// thread meanwhile. cmd.Wait alone blocks in waitid for the shell's whole
// life, and the runtime gives every goroutine blocked in a system call a
// thread of its own: one thread per session (issue 10 item 5). A pidfd
// becomes readable when its process exits, so the goroutine parks on the
// runtime's poller instead, and cmd.Wait then returns at once. Where pidfds
// do not work (Linux before 5.3, a seccomp filter) it falls back to the
// blocking wait.
func waitExit(cmd *exec.Cmd) error {
	if fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK); err == nil {
		f := os.NewFile(uintptr(fd), "pidfd")
		if rc, err := f.SyscallConn(); err == nil {
			// Read calls exited, and parks on the poller until the pidfd
			// is readable whenever it returns false. An error (the file
			// is not pollable) leaves the blocking wait below to do it.
			_ = rc.Read(exited)
		}
		_ = f.Close()
	}
	return cmd.Wait()
}

// exited reports whether the process of pidfd has exited (or cannot be
// waited for), leaving it for cmd.Wait to reap (WNOWAIT).
func exited(pidfd uintptr) bool {
	for {
		var info unix.Siginfo // Signo stays 0 while the process runs
		err := unix.Waitid(unix.P_PIDFD, int(pidfd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err != nil || info.Signo != 0
		}
	}
}
