package sshd

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// slowTarget's connections take each write slowly (a target that reads
// slowly, or a long way into an instance), so that the client's close
// comes while the copy to the target still has bytes to carry.
type slowTarget struct{ remote.Runner }

func (s slowTarget) Dial(ctx context.Context, inst sessions.Instance, host string, port int) (remote.Conn, error) {
	c, err := s.Runner.Dial(ctx, inst, host, port)
	if err != nil {
		return nil, err
	}
	return slowConn{c}, nil
}

type slowConn struct{ remote.Conn }

func (s slowConn) Write(p []byte) (int, error) {
	time.Sleep(10 * time.Millisecond) // a delay, not a synchronisation: the target's pace
	return s.Conn.Write(p)
}

// TestForwardClientClosesRightAfterItsLastBytes: the target answers and
// ends its side first; the client then sends its last bytes, its EOF and
// its channel close at once (as OpenSSH's -L does once both its sides
// are done). Every byte sent before the close reaches the target: the
// close does not cut the copy still carrying them.
func TestForwardClientClosesRightAfterItsLastBytes(t *testing.T) {
	heard := make(chan []byte, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			heard <- nil
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "hello")
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(waitFor))
		b, _ := io.ReadAll(c)
		heard <- b
	}()
	f := newForwardFixture(t, func(c *Config) { c.Remote = slowTarget{c.Remote} })
	conn, err := openForward(t, f.dial(t, "admin", "web1"), l.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	if got, err := io.ReadAll(conn); err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v; want the answer and EOF", got, err)
	}
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	if _, err := conn.Write(data); err != nil {
		t.Fatal(err)
	}
	_ = conn.(interface{ CloseWrite() error }).CloseWrite()
	_ = conn.Close()
	select {
	case b := <-heard:
		if !bytes.Equal(b, data) {
			t.Fatalf("the target got %d bytes of %d", len(b), len(data))
		}
	case <-time.After(waitFor):
		t.Fatal("the target's read did not end")
	}
	eventually(t, "the forward ends", func() bool { return f.srv.remoteRunning() == 0 })
}
