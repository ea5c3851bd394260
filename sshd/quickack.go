package sshd

import (
	"net"
	"sync/atomic"
)

// quickAckConn acknowledges every segment it reads at once during the SSH
// handshake. OpenSSH's client leaves Nagle on until it has a session, and
// the handshake has two spots where it writes twice in a row with the
// server sending nothing in between (its SSH_MSG_KEX_ECDH_INIT after its
// KEXINIT, SERVICE_REQUEST after NEWKEYS): the second write waits for the
// ACK of the first, which Linux delays by 40 ms when the receiver is in
// its interactive (ping-pong) mode. That was 80 of the ~115 ms of every
// connection's handshake on loopback (strace of `ssh HOST help`).
// TCP_QUICKACK is not sticky, so it is set again before each read, and
// only until the handshake ended (Done): after that the client has
// TCP_NODELAY and the reads of a transfer need no extra system call.
type quickAckConn struct {
	net.Conn
	off atomic.Bool
}

// withQuickAck wraps nc when it is a TCP connection on a system that has
// TCP_QUICKACK; it returns nc itself otherwise.
func withQuickAck(nc net.Conn) net.Conn {
	if _, ok := nc.(*net.TCPConn); !ok || !quickAckSupported {
		return nc
	}
	return &quickAckConn{Conn: nc}
}

func (c *quickAckConn) Read(b []byte) (int, error) {
	if !c.off.Load() {
		quickAck(c.Conn.(*net.TCPConn))
	}
	return c.Conn.Read(b)
}

// handshakeDone stops the quick ACKs of nc when withQuickAck wrapped it.
func handshakeDone(nc net.Conn) {
	if c, ok := nc.(*quickAckConn); ok {
		c.off.Store(true)
	}
}
