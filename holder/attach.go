package holder

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// A gateway reaches a holder through an exec of "termgate-holder attach",
// whose stdin and stdout are the gateway's stream. Copying between them and
// the holder's socket in that process costs two more process hops per
// chunk of output and per keystroke (the durable path's main overhead in
// make bench). So the attach process hands the holder the descriptors
// themselves (SCM_RIGHTS, with the gateway's first frame) and then only
// waits: the holder reads the gateway's frames from the exec's stdin and
// writes its own into the exec's stdout. The attach process must stay:
// the engine ends an exec's streams shortly after its process exits. It
// exits when the holder closes the socket (the connection is over).
//
// Versions meet both ways. A holder that predates this reads the socket
// with read(2), which discards the passed descriptors, and answers the
// hello on the socket: the attach process sees a frame other than
// TypePassed and copies, as it always did. An attach process that predates
// this passes nothing, and the holder serves the socket as before.

// Attach connects the exec's stream (in: the gateway's frames, out: the
// holder's) to the holder listening on sock. With pass it offers the
// holder the descriptors and falls back to copying when the holder does
// not take them; without it, it only copies (what builds before
// descriptor passing did; tests use it to play such an attach process).
// It returns when the connection is over.
func Attach(sock string, in, out *os.File, pass bool) error {
	// The gateway's stream goes only to a listener of this user's, in a
	// directory of this user's (see trust.go): checked before it is
	// connected, and the listener once it is.
	dial := func() (*net.UnixConn, error) {
		if err := checkSocket(sock); err != nil {
			return nil, err
		}
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			return nil, fmt.Errorf("no holder answers on %s: %w", sock, err)
		}
		if err := checkPeer(c, sock); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	if !pass {
		c, err := dial()
		if err != nil {
			return err
		}
		defer c.Close()
		return bridge(c, c, in, out)
	}
	// The first frame is read exactly (no read-ahead), so that nothing
	// the gateway sent after it is left in this process: the holder reads
	// the rest from in itself. It is read before connecting, so the
	// holder never waits on a connection with nothing to read.
	first, err := readFrameBytes(in)
	if err != nil {
		return fmt.Errorf("the gateway's first frame: %w", err)
	}
	c, err := dial()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := sendWithFDs(c, first, in, out); err != nil {
		return fmt.Errorf("pass the exec's stream to the holder on %s: %w", sock, err)
	}
	r := bufio.NewReader(c)
	hdr, err := r.Peek(headerLen)
	if err != nil {
		return fmt.Errorf("the holder on %s: %w", sock, err)
	}
	if hdr[0] != TypePassed {
		// A holder that does not take descriptors answered on the socket:
		// copy, its answer first.
		return bridge(c, r, in, out)
	}
	// The holder has the stream; wait until it is done with it. Whatever
	// else arrives here is not for the gateway.
	_, _ = io.Copy(io.Discard, r)
	return nil
}

// bridge copies in to the socket and the socket (read through r) to out,
// until either side ends.
func bridge(c net.Conn, r io.Reader, in *os.File, out io.Writer) error {
	done := make(chan error, 2)
	go func() {
		_, err := io.Copy(c, in)
		done <- err
	}()
	go func() {
		_, err := io.Copy(out, r)
		done <- err
	}()
	err := <-done
	c.Close() // ends the socket's copy
	// The other copy may wait in a read of in: a pollable in (a pipe of
	// a test) is interrupted and waited for; a blocking one (the exec's
	// stdin) ends with the process.
	if in.SetReadDeadline(time.Now()) == nil {
		<-done
	}
	return err
}

// readFrameBytes reads one whole frame, header included, with exact reads.
func readFrameBytes(in io.Reader) ([]byte, error) {
	hdr := make([]byte, headerLen)
	if _, err := io.ReadFull(in, hdr); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes (type %q)", ErrTooLarge, n, hdr[0])
	}
	b := make([]byte, headerLen+int(n))
	copy(b, hdr)
	if _, err := io.ReadFull(in, b[headerLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// sendWithFDs writes b to c with in's and out's descriptors attached.
// SyscallConn, not Fd: Fd would put the files in blocking mode.
func sendWithFDs(c *net.UnixConn, b []byte, in, out *os.File) error {
	var fds [2]int
	for i, f := range []*os.File{in, out} {
		rc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		if err := rc.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			return err
		}
	}
	// The descriptors are only read here; in and out stay open (the
	// caller owns them) until the message is sent.
	n, _, err := c.WriteMsgUnix(b, syscall.UnixRights(fds[0], fds[1]), nil)
	if err == nil && n < len(b) {
		_, err = c.Write(b[n:])
	}
	return err
}
