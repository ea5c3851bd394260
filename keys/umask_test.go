//go:build unix

package keys

import "syscall"

// umask sets the process's umask and returns the old one (tests only: it
// is process-wide, and no test in this package runs in parallel).
func umask(mask int) int { return syscall.Umask(mask) }
