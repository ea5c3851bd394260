package holder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The dial tool's output (termgate-holder dial, after ToolReady) is framed,
// so that the peer's end reaches the gateway in the stream itself: a
// Docker exec's attached stream ends only when the whole exec does, and
// the exec goes on while the gateway still sends (a peer that closed only
// its own side, an HTTP server that answered and closed). A frame is a
// kind byte, a big-endian uint32 length and that many bytes:
//
//	'd' data   what the peer sent (1..DialFrameMax bytes)
//	'e' EOF    the peer ended its side (length 0); nothing follows
//	'x' error  reading from the peer failed (the reason, at most
//	           DialErrorMax bytes); nothing follows
//
// The gateway's writes (stdin) stay a plain byte stream: its end (the
// exec's stdin closed) is already the half-close the tool passes on.
const (
	dialFrameData  = 'd'
	dialFrameEOF   = 'e'
	dialFrameError = 'x'
	dialHeaderLen  = 5
)

// DialFrameMax bounds a data frame: the tool sends at most this much at a
// time, and the gateway refuses more (the instance is not trusted).
const DialFrameMax = 32 << 10

// DialErrorMax bounds an error frame's reason.
const DialErrorMax = 512

// DialWriter frames what the peer sends for the gateway (the tool's side).
type DialWriter struct {
	w   io.Writer
	buf []byte
}

// NewDialWriter frames onto w.
func NewDialWriter(w io.Writer) *DialWriter {
	return &DialWriter{w: w, buf: make([]byte, dialHeaderLen+DialFrameMax)}
}

// CopyFrom copies r to the gateway in data frames until r ends, then sends
// the EOF frame (r's io.EOF) or the error frame (any other error); it
// returns r's error, or the write's that stopped it.
func (d *DialWriter) CopyFrom(r io.Reader) error {
	for {
		n, rerr := r.Read(d.buf[dialHeaderLen:])
		if n > 0 {
			if err := d.frame(dialFrameData, n); err != nil {
				return err
			}
		}
		switch {
		case errors.Is(rerr, io.EOF):
			return d.frame(dialFrameEOF, 0)
		case rerr != nil:
			n := copy(d.buf[dialHeaderLen:dialHeaderLen+DialErrorMax], rerr.Error())
			if err := d.frame(dialFrameError, n); err != nil {
				return errors.Join(rerr, err)
			}
			return rerr
		}
	}
}

// frame sends the frame of kind whose n bytes are already in buf, in one
// write (one pipe write, one engine frame).
func (d *DialWriter) frame(kind byte, n int) error {
	d.buf[0] = kind
	binary.BigEndian.PutUint32(d.buf[1:dialHeaderLen], uint32(n))
	_, err := d.w.Write(d.buf[:dialHeaderLen+n])
	return err
}

// DialReader reads the peer's bytes out of the dial tool's frames (the
// gateway's side): io.EOF after the EOF frame, a *DialPeerError after an
// error frame, and an error wrapping io.ErrUnexpectedEOF when the stream
// ends without either (the tool was killed, the exec or instance ended).
type DialReader struct {
	r    io.Reader
	left int   // bytes of the current data frame not yet returned
	end  error // set once the stream ended, returned from then on
	hdr  [dialHeaderLen]byte
}

// NewDialReader reads frames from r (after the ready line).
func NewDialReader(r io.Reader) *DialReader { return &DialReader{r: r} }

// DialPeerError is the tool's report that reading from the peer failed (a
// reset connection, say).
type DialPeerError struct{ Reason string }

func (e *DialPeerError) Error() string { return "the connection in the instance failed: " + e.Reason }

func (d *DialReader) Read(p []byte) (int, error) {
	for d.left == 0 {
		if d.end != nil {
			return 0, d.end
		}
		d.end = d.next()
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := d.r.Read(p[:min(len(p), d.left)])
	d.left -= n
	if err != nil && d.left > 0 {
		d.end = dialTruncated(err)
		d.left = 0
		return n, d.end
	}
	return n, nil
}

// next reads a frame header (and an error frame's reason): nil with left
// set for data, else the stream's end.
func (d *DialReader) next() error {
	if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
		return dialTruncated(err)
	}
	size := binary.BigEndian.Uint32(d.hdr[1:])
	switch d.hdr[0] {
	case dialFrameData:
		if size == 0 || size > DialFrameMax {
			return fmt.Errorf("dial stream: a data frame of %d bytes (want 1-%d): not this gateway's holder", size, DialFrameMax)
		}
		d.left = int(size)
		return nil
	case dialFrameEOF:
		if size != 0 {
			return fmt.Errorf("dial stream: an EOF frame of %d bytes: not this gateway's holder", size)
		}
		return io.EOF
	case dialFrameError:
		if size > DialErrorMax {
			return fmt.Errorf("dial stream: an error frame of %d bytes (at most %d): not this gateway's holder", size, DialErrorMax)
		}
		msg := make([]byte, size)
		if _, err := io.ReadFull(d.r, msg); err != nil {
			return dialTruncated(err)
		}
		return &DialPeerError{Reason: printable(string(msg))}
	}
	return fmt.Errorf("dial stream: unknown frame kind %#x: not this gateway's holder", d.hdr[0])
}

func dialTruncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("dial stream: the helper in the instance ended before the connection did: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("dial stream: %w", err)
}

// printable replaces control characters (the text comes from the instance).
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
