package websock

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// limitUnsent finds the TCP connection under the limiter's wrapper and
// sets TCP_NOTSENT_LOWAT on it.
func TestLimitUnsentSetsNotSentLowat(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	limitUnsent(&limitedConn{Conn: c})
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if got != notSentLowat {
		t.Fatalf("TCP_NOTSENT_LOWAT %d, want %d", got, notSentLowat)
	}
}
