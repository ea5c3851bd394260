package sshd

import (
	"io"
	"net"
	"testing"
)

// TestQuickAckConn: a TCP connection is wrapped and reads through it
// (with and after the quick ACKs) return what was sent; anything else is
// left as it is.
func TestQuickAckConn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, err = c.Write([]byte("abcd"))
			_ = c.Close()
		}
		done <- err
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	nc := withQuickAck(raw)
	if _, ok := nc.(*quickAckConn); ok != quickAckSupported {
		t.Fatalf("wrapped = %v, want %v", ok, quickAckSupported)
	}
	b := make([]byte, 2)
	if _, err := io.ReadFull(nc, b); err != nil || string(b) != "ab" {
		t.Fatalf("read %q, %v", b, err)
	}
	handshakeDone(nc)
	if rest, err := io.ReadAll(nc); err != nil || string(rest) != "cd" {
		t.Fatalf("read %q, %v after the handshake", rest, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if withQuickAck(p1) != p1 {
		t.Fatal("a pipe was wrapped")
	}
	handshakeDone(p1) // no-op
}
