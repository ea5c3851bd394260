//go:build !linux

package gatewayproc

import "syscall"

// sysProcAttr: only Linux has a parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }
