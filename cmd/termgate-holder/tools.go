package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/holder"
)

// The tool subcommands: what the gateway runs in an instance beside its
// sessions, each one exec long, its stdin and stdout the stream.
//
//	termgate-holder sftp [--install-as PATH] [--read-only] [--cwd-of SESSION]
//	    serves SFTP (version 3, github.com/pkg/sftp) on stdin/stdout, as
//	    the exec's user, from its home directory (else /), or with
//	    --cwd-of from the working directory of that session's shell
//	    (holder.SessionCwd; home when it cannot be found);
//	termgate-holder dial [--install-as PATH] HOST:PORT|unix:PATH
//	    connects to HOST:PORT (TCP, 10 s to connect), or to the unix
//	    socket PATH, from the instance's
//	    network namespace and copies stdin to it and it to stdout, each
//	    direction half-closed when its source ends; stdout is framed
//	    (holder.DialWriter) so that the peer's end reaches the gateway
//	    while its stdin still runs.
//
// Each writes holder.ToolReady and a newline first, once it runs (dial:
// once connected), so the gateway tells "cannot run here" from the tool's
// own failure. --install-as is attach's: the gateway uploaded this binary under a
// temporary name (launchScript checked it), and it renames itself into
// .termgate first, so the next tool or session finds it there.

// dialTimeout bounds a dial's connect.
const dialTimeout = 10 * time.Second

// toolArgs installs this binary first when args start with --install-as
// PATH, and returns the rest.
func toolArgs(args []string) ([]string, error) {
	if len(args) >= 2 && args[0] == "--install-as" {
		if err := install(args[1]); err != nil {
			return nil, err
		}
		return args[2:], nil
	}
	return args, nil
}

// stdio is the exec's stdin and stdout as one stream.
type stdio struct {
	in  io.ReadCloser
	out io.WriteCloser
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }

func (s stdio) Close() error {
	return errors.Join(s.in.Close(), s.out.Close())
}

// workDir is where an SFTP client starts: the user's home when it is a
// directory, else /.
func workDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		if fi, err := os.Stat(home); err == nil && fi.IsDir() {
			return home
		}
	}
	return "/"
}

// sessionDir is the working directory of session id's shell, or def when
// it cannot be found: where the transfer starts is a convenience, never a
// reason to fail it.
func sessionDir(id, def string) string {
	if dir, err := holder.SessionCwd(id); err == nil {
		return dir
	}
	return def
}

// serveSFTP serves SFTP on in/out until the client ends the stream:
// pkg/sftp's server behind the limits@openssh.com shim (sftplimits.go),
// which filters the requests on a goroutine that serveSFTP waits for.
func serveSFTP(in io.ReadCloser, out io.WriteCloser, dir string, readOnly bool) error {
	shim := newLimitsShim(out)
	reqR, reqW := io.Pipe()
	opts := []sftp.ServerOption{sftp.WithServerWorkingDirectory(dir), sftp.WithMaxTxPacket(sftpMaxData)}
	if readOnly { // a download-only credential (files="download"): pkg/sftp refuses every write
		opts = append(opts, sftp.ReadOnly())
	}
	srv, err := sftp.NewServer(stdio{reqR, shimOut{shim, out}}, opts...)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(out, holder.ToolReady+"\n"); err != nil {
		return err
	}
	filtered := make(chan error, 1)
	go func() {
		err := shim.filterRequests(in, reqW)
		_ = reqW.CloseWithError(err) // nil: the server reads EOF
		filtered <- err
	}()
	err = srv.Serve()
	_ = srv.Close()
	_ = in.Close() // a server that stopped first: unblock the filter's read
	ferr := <-filtered
	if errors.Is(err, io.EOF) { // the client is done
		err = nil
	}
	if errors.Is(ferr, io.ErrClosedPipe) || errors.Is(ferr, os.ErrClosed) {
		ferr = nil // the server stopped first; err says why
	}
	return errors.Join(err, ferr)
}

// shimOut is the server's output: through the shim, closed as out.
type shimOut struct {
	shim *limitsShim
	out  io.Closer
}

func (s shimOut) Write(p []byte) (int, error) { return s.shim.Write(p) }
func (s shimOut) Close() error                { return s.out.Close() }

// halfCloser is a connection whose write side can be ended alone.
type halfCloser interface {
	CloseWrite() error
}

// dial connects to addr (HOST:PORT, or unix:PATH for a unix socket) and
// serves the connection (serveForwarded).
func dial(addr string, in io.Reader, out io.WriteCloser) error {
	var conn net.Conn
	var err error
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if err := checkSocketPath(path); err != nil {
			return err
		}
		conn, err = net.DialTimeout("unix", path, dialTimeout)
	} else {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("dial %q: want HOST:PORT or unix:PATH: %w", addr, err)
		}
		conn, err = net.DialTimeout("tcp", addr, dialTimeout)
	}
	if err != nil {
		return err
	}
	return serveForwarded(conn, in, out)
}

// serveForwarded copies in to the connection and the connection to out until
// both directions ended: in's EOF half-closes the connection; the peer's
// EOF (or a failed read) is sent in a frame, and out is closed once both
// ended. The frame, not out's close, is what the gateway sees: a Docker
// exec's stream ends only with the exec, which goes on as long as in does.
func serveForwarded(conn net.Conn, in io.Reader, out io.WriteCloser) error {
	defer conn.Close()
	if _, err := io.WriteString(out, holder.ToolReady+"\n"); err != nil {
		return err
	}
	up := make(chan error, 1)
	go func() { // ends with in's EOF or the connection's end
		_, err := io.Copy(conn, in)
		if hc, ok := conn.(halfCloser); ok {
			_ = hc.CloseWrite()
		}
		up <- err
	}()
	derr := holder.NewDialWriter(out).CopyFrom(conn)
	// The upload side may go on (the peer half-closed only its own
	// side); it ends with the gateway's EOF on stdin, which comes at the
	// latest when the gateway drops the exec. out stays open until then:
	// the kubelet ends an exec's whole stream once its output ends.
	uerr := <-up
	_ = out.Close()
	return errors.Join(derr, ignoreClosed(uerr))
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
