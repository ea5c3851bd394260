package websock

import "net"

// notSentLowat bounds the output a WebSocket's socket holds that the
// network has not taken yet (TCP_NOTSENT_LOWAT, Linux; elsewhere nothing
// is set). Without it the kernel lets the send buffer grow to megabytes
// behind a slow reader and wakes a blocked write only once a third of it
// has drained: a client reading at 100 KB/s then took one 256 KiB frame
// for over 10 s and was cut as fallen behind (the write timeout), although
// it read all the time. With it a write goes on as the reader reads, so
// only a client that reads (almost) nothing is cut, and one that falls
// behind the output is brought forward instead (sessions, skip.go).
const notSentLowat = 128 << 10

// limitUnsent sets notSentLowat on the TCP connection under nc (a
// *tls.Conn, the connection limiter's wrapper). A failure only costs what
// it would have saved.
func limitUnsent(nc net.Conn) {
	for nc != nil {
		switch c := nc.(type) {
		case *net.TCPConn:
			if rc, err := c.SyscallConn(); err == nil {
				_ = rc.Control(func(fd uintptr) { setNotSentLowat(fd, notSentLowat) })
			}
			return
		case *limitedConn:
			nc = c.Conn
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return
		}
	}
}
