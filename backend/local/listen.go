package local

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// DialUnix connects to a unix socket on the gateway's host (a local
// instance shares its filesystem).
func (b *Backend) DialUnix(ctx context.Context, _ sessions.Instance, path string) (remote.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("local dial: %w", err)
	}
	return c.(*net.UnixConn), nil
}

// Listen listens on the gateway's host (ssh -R into a local instance):
// "tcp" HOST:PORT or "unix" PATH (created 0600, as OpenSSH's
// StreamLocalBindMask). The listener ends with Close or ctx.
func (b *Backend) Listen(ctx context.Context, _ sessions.Instance, network, addr string) (remote.Listener, error) {
	if network != "tcp" && network != "unix" {
		return nil, fmt.Errorf("listen: unknown network %q", network)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("local listen: %w", err)
	}
	if network == "unix" {
		if err := os.Chmod(addr, 0o600); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("local listen: %w", err)
		}
	}
	l := &listener{ln: ln}
	l.stop = context.AfterFunc(ctx, func() { _ = ln.Close() })
	return l, nil
}

type listener struct {
	ln   net.Listener
	stop func() bool
}

func (l *listener) Addr() string {
	if ua, ok := l.ln.Addr().(*net.UnixAddr); ok {
		return ua.Name
	}
	return l.ln.Addr().String()
}

func (l *listener) Close() error {
	l.stop()
	return l.ln.Close()
}

func (l *listener) Accept() (remote.Incoming, error) {
	c, err := l.ln.Accept()
	if err != nil {
		return nil, err
	}
	return incoming{c}, nil
}

// incoming is an accepted connection, carried back as it is.
type incoming struct{ c net.Conn }

func (i incoming) Origin() (string, int) {
	if ta, ok := i.c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.IP.String(), ta.Port
	}
	return "", 0
}

func (i incoming) Fetch(context.Context) (remote.Conn, error) {
	return i.c.(remote.Conn), nil // *net.TCPConn or *net.UnixConn
}

func (i incoming) Drop() { _ = i.c.Close() }
