//go:build unix

package keys

import "syscall"

// The tests count warnings, and t.TempDir follows the umask: under 002 every
// test directory would be group-writable, which adds a warning to each load
// (internal/fileperm tests that rule). They run under 022.
func init() { syscall.Umask(0o022) }

// umask sets the process's umask and returns the old one (tests only: it
// is process-wide, and no test in this package runs in parallel).
func umask(mask int) int { return syscall.Umask(mask) }
