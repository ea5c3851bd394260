package local

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// dialTimeout bounds a forwarded connection's connect: a local instance is
// the gateway's own host, so anything slower is not going to answer.
const dialTimeout = 10 * time.Second

// Dial connects to host:port from the gateway's host: a local instance
// shares its network (127.0.0.1 is the gateway's own loopback).
func (b *Backend) Dial(ctx context.Context, _ sessions.Instance, host string, port int) (remote.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("local dial: %w", err)
	}
	return c.(*net.TCPConn), nil
}
