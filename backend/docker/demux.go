package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/termgate/termgate/backend/exechost"
)

// demuxReader reads the stdout of a non-TTY exec's multiplexed stream
// (the Engine API's 8-byte frame headers: stream, 3 zero bytes, big-endian
// length) in the reader's own goroutine, without stdcopy's copying
// goroutine and pipe. Stderr goes to errW when set (a command's, written
// from the reader's goroutine as its frames come), else is kept (its first
// 4 KiB) for error messages.
type demuxReader struct {
	r    *bufio.Reader
	errW io.Writer // nil: keep the first 4 KiB
	left int       // bytes of the current stdout frame not yet returned
	hdr  [8]byte

	mu     sync.Mutex
	stderr bytes.Buffer
}

const demuxStderrMax = 4 << 10

func newDemuxReader(r io.Reader, stderr io.Writer) *demuxReader {
	br, ok := r.(*bufio.Reader) // the hijacked response's reader is one
	if !ok {
		br = bufio.NewReaderSize(r, 32<<10)
	}
	d := &demuxReader{r: br}
	if stderr != nil {
		d.errW = exechost.KeepWriting(stderr)
	}
	return d
}

func (d *demuxReader) Read(p []byte) (int, error) {
	for d.left == 0 {
		if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("exec stream: truncated frame header: %w", err)
			}
			return 0, err
		}
		size := int(binary.BigEndian.Uint32(d.hdr[4:]))
		switch d.hdr[0] {
		case 0, 1: // stdout (stdcopy takes 0, stdin, as stdout too)
			d.left = size
		case 2, 3: // stderr; 3 is the engine's own error about the exec
			if d.hdr[0] == 2 && d.errW != nil {
				if _, err := io.CopyN(d.errW, d.r, int64(size)); err != nil {
					return 0, fmt.Errorf("exec stream: truncated frame: %w", io.ErrUnexpectedEOF)
				}
				continue
			}
			if err := d.keepStderr(size); err != nil {
				return 0, err
			}
			if d.hdr[0] == 3 {
				return 0, fmt.Errorf("exec stream: engine error: %s", d.Stderr())
			}
		default:
			return 0, fmt.Errorf("exec stream: unknown stream %d in a frame header", d.hdr[0])
		}
	}
	n, err := d.r.Read(p[:min(len(p), d.left)])
	d.left -= n
	if errors.Is(err, io.EOF) && d.left > 0 {
		err = fmt.Errorf("exec stream: truncated frame: %w", io.ErrUnexpectedEOF)
	}
	return n, err
}

func (d *demuxReader) keepStderr(size int) error {
	d.mu.Lock()
	keep := min(size, demuxStderrMax-d.stderr.Len())
	d.mu.Unlock()
	buf := make([]byte, max(keep, 0))
	if _, err := io.ReadFull(d.r, buf); err != nil {
		return fmt.Errorf("exec stream: truncated frame: %w", io.ErrUnexpectedEOF)
	}
	if _, err := d.r.Discard(size - len(buf)); err != nil {
		return fmt.Errorf("exec stream: truncated frame: %w", io.ErrUnexpectedEOF)
	}
	d.mu.Lock()
	d.stderr.Write(buf)
	d.mu.Unlock()
	return nil
}

// Stderr returns what the exec wrote to stderr so far (its first 4 KiB).
func (d *demuxReader) Stderr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}
