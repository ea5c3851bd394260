package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// childAttr makes the kernel send the gateway SIGTERM should tgbench die
// without cleaning up (SIGKILL, say).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// procCPU returns the process's user plus system CPU time so far.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(data))
}
