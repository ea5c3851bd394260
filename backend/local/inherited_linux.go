package local

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec marks every descriptor above 2 that this process
// inherited without close-on-exec (a supervisor's pipe, a leaked socket)
// close-on-exec, so that no shell the local backend starts holds it: a
// shell could write into it (or, writing into a pipe nobody reads, die of
// SIGPIPE). Descriptors the gateway opens itself are close-on-exec already
// (Go opens everything with O_CLOEXEC), so marking one again is harmless.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err == nil && flags&unix.FD_CLOEXEC == 0 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC)
		}
	}
}
