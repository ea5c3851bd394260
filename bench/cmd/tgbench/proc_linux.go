package main

import (
	"fmt"
	"os"
	"strings"
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

// procRSS returns the process's resident set size in bytes.
func procRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(data), &size, &resident); err != nil {
		return 0, fmt.Errorf("/proc/%d/statm: %w", pid, err)
	}
	return resident * int64(os.Getpagesize()), nil
}

// procPSS returns the process's proportional set size in bytes (the Pss
// line of /proc/PID/smaps_rollup): its resident pages, each shared one
// divided by the number of processes sharing it.
func procPSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			var kib int64
			if _, err := fmt.Sscan(v, &kib); err != nil {
				return 0, fmt.Errorf("/proc/%d/smaps_rollup: %q: %w", pid, line, err)
			}
			return kib << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/smaps_rollup has no Pss line (a zombie, or a kernel before 4.14)", pid)
}
