package local

import (
	"context"
	"errors"
	"io"
	"net"
	"os"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// SFTP serves SFTP in-process (github.com/pkg/sftp) as the gateway's user,
// from the shells' working directory (Config.Dir, else the gateway's), or
// the current one of opts.CwdOf's shell (holder.SessionCwd: the shells are
// this process's children, marked as the holder's are), over an in-memory
// pipe whose other end is returned. The server's goroutine ends when the
// Conn is closed, or ctx ends.
func (b *Backend) SFTP(ctx context.Context, inst sessions.Instance, opts remote.SFTPOptions) (remote.Conn, error) {
	if err := noLogins(opts.Login); err != nil {
		return nil, err
	}
	if _, err := b.Lookup(ctx, inst.Name); err != nil {
		return nil, err
	}
	dir := b.cfg.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			dir = "/"
		}
	}
	if opts.CwdOf != "" {
		if cwd, err := holder.SessionCwd(opts.CwdOf); err == nil {
			dir = cwd
		} else {
			b.cfg.Logger.Debug("local: the session's directory", "session", opts.CwdOf, "err", err)
		}
	}
	ours, theirs := net.Pipe()
	sopts := []sftp.ServerOption{sftp.WithServerWorkingDirectory(dir)}
	if opts.ReadOnly {
		sopts = append(sopts, sftp.ReadOnly())
	}
	srv, err := sftp.NewServer(ours, sopts...)
	if err != nil {
		ours.Close()
		theirs.Close()
		return nil, err
	}
	c := &pipeConn{Conn: theirs, done: make(chan struct{})}
	c.stop = context.AfterFunc(ctx, func() { _ = c.Close() })
	go func() { // ends when either end of the pipe closes
		defer close(c.done)
		err := srv.Serve()
		_ = srv.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
			b.cfg.Logger.Debug("local: sftp server ended", "instance", inst.Name, "err", err)
		}
	}()
	return c, nil
}

// pipeConn is the client's end of an in-process server's pipe. net.Pipe
// has no half-close: CloseWrite closes the pipe, which an SFTP server
// takes as the client's end (it sends nothing after its client stopped).
type pipeConn struct {
	net.Conn
	stop func() bool
	done chan struct{} // closed once the server's goroutine returned
}

func (c *pipeConn) CloseWrite() error { return c.Close() }

// Close closes the pipe and waits for the server's goroutine.
func (c *pipeConn) Close() error {
	c.stop()
	err := c.Conn.Close()
	<-c.done
	return err
}
