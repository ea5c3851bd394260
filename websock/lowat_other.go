//go:build !linux

package websock

func setNotSentLowat(uintptr, int) {}
