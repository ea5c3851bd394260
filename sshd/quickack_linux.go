package sshd

import (
	"net"
	"syscall"
)

const quickAckSupported = true

// quickAck asks the kernel to acknowledge what arrives next at once. A
// failure only costs the delay it would have saved.
func quickAck(c *net.TCPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
}
