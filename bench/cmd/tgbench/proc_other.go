//go:build !linux

package main

import (
	"errors"
	"syscall"
	"time"
)

func childAttr() *syscall.SysProcAttr { return nil }

func procCPU(int) (time.Duration, error) {
	return 0, errors.New("the gateway's CPU time is read from /proc: Linux only")
}

func procRSS(int) (int64, error) {
	return 0, errors.New("the gateway's memory is read from /proc: Linux only")
}

func procPSS(int) (int64, error) {
	return 0, errors.New("memory is read from /proc: Linux only")
}
