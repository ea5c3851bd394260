package holder

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// The holder's side of descriptor passing (see attach.go).

// first reads the connection's first frame and sets up where the rest is
// read from (the returned Reader) and written to (c.out). When the attach
// process passed the exec's stdin and stdout with a hello this holder
// accepts, they carry the connection from here on; the socket then only
// tells when the attach process is gone (a goroutine in wg watches it).
func (c *conn) first(wg *sync.WaitGroup) (Frame, *Reader, error) {
	uc, ok := c.nc.(*net.UnixConn)
	if !ok || c.h.cfg.NoPassing {
		r := NewReader(bufio.NewReader(c.nc))
		f, err := r.ReadFrame()
		return f, r, err
	}
	b, fds, err := readFirst(uc)
	if err != nil {
		closeFDs(fds)
		return Frame{}, nil, err
	}
	f := Frame{Type: b[0], Payload: b[headerLen:]}
	// A hello of another version is answered on the socket, as a holder
	// without passing would: the attach process copies it to the gateway.
	if _, herr := checkHello(f, c.h.cfg.Proto); herr != nil || len(fds) != 2 {
		closeFDs(fds)
		return f, NewReader(bufio.NewReader(c.nc)), nil
	}
	files := make([]*os.File, 2)
	for i, fd := range fds {
		// Non-blocking before NewFile, so the files are on the runtime's
		// poller: Close then interrupts a blocked read or write (a stuck
		// gateway is dropped with it, see connStall).
		if err := syscall.SetNonblock(fd, true); err != nil {
			closeFDs(fds)
			return Frame{}, nil, fmt.Errorf("holder: passed descriptor: %w", err)
		}
		syscall.CloseOnExec(fd)
		files[i] = os.NewFile(uintptr(fd), []string{"exec-stdin", "exec-stdout"}[i])
	}
	if _, err := uc.Write(passedFrame); err != nil {
		for _, f := range files {
			_ = f.Close()
		}
		return Frame{}, nil, err
	}
	c.passed, c.out = files, files[1]
	wg.Go(func() {
		// The attach process sends nothing more: this returns when it
		// exits or when close closes the socket.
		_, _ = io.Copy(io.Discard, uc)
		c.close()
	})
	return f, NewReader(bufio.NewReaderSize(files[0], 32<<10)), nil
}

var passedFrame, _ = AppendFrame(nil, TypePassed)

// readFirst reads one frame from the socket with exact reads (the rest of
// the stream stays in the socket), with the descriptors passed along.
func readFirst(uc *net.UnixConn) (frame []byte, fds []int, err error) {
	oob := make([]byte, syscall.CmsgSpace(4*4))
	read := func(b []byte) error {
		for len(b) > 0 {
			n, oobn, _, _, err := uc.ReadMsgUnix(b, oob)
			if oobn > 0 {
				got, perr := parseRights(oob[:oobn])
				fds = append(fds, got...)
				if perr != nil && err == nil {
					err = perr
				}
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return io.ErrUnexpectedEOF
			}
			b = b[n:]
		}
		return nil
	}
	hdr := make([]byte, headerLen)
	if err := read(hdr); err != nil {
		return nil, fds, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxPayload {
		return nil, fds, fmt.Errorf("%w: %d bytes (type %q)", ErrTooLarge, n, hdr[0])
	}
	frame = make([]byte, headerLen+int(n))
	copy(frame, hdr)
	if err := read(frame[headerLen:]); err != nil {
		return nil, fds, err
	}
	return frame, fds, nil
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		if got, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
