package remote

import (
	"context"

	"github.com/termgate/termgate/sessions"
)

// SocketDialer is a Runner that also connects to unix sockets inside an
// instance (ssh -L LPORT:/PATH, direct-streamlocal).
type SocketDialer interface {
	DialUnix(ctx context.Context, inst sessions.Instance, path string) (Conn, error)
}

// ListenRunner is a Runner that also listens inside an instance (ssh -R):
// network "tcp" with addr HOST:PORT (port 0: the instance's kernel
// picks), or "unix" with addr a socket path. ctx bounds the start only;
// the listener lives until Close.
type ListenRunner interface {
	Listen(ctx context.Context, inst sessions.Instance, network, addr string) (Listener, error)
}

// Listener is a listener inside an instance.
type Listener interface {
	// Addr is what it is bound to: HOST:PORT (the chosen port) or the path.
	Addr() string
	// Accept returns the next connection the instance made to it, or an
	// error once the listener ended (Close, the instance or helper gone).
	Accept() (Incoming, error)
	// Close ends the listener and every connection not fetched yet.
	Close() error
}

// Incoming is a connection accepted in the instance, waiting for Fetch
// (it is carried back) or Drop (the client refused it).
type Incoming interface {
	// Origin is the peer's address in the instance ("" and 0 for a unix
	// socket).
	Origin() (host string, port int)
	// Fetch takes the connection: a Conn whose Read ends with io.EOF at
	// the peer's half-close, and CloseWrite passes the client's on.
	Fetch(ctx context.Context) (Conn, error)
	// Drop closes it in the instance.
	Drop()
}
