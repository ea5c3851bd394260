//go:build !linux

package local

// closeInheritedOnExec is Linux-only (it reads /proc/self/fd).
func closeInheritedOnExec() {}
