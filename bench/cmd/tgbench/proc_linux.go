package main

import "syscall"

// childAttr makes the kernel send the gateway SIGTERM should tgbench die
// without cleaning up (SIGKILL, say).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
