// The wire protocol between a gateway and a holder: frames on a byte
// stream (an exec's stdin/stdout, bridged to the holder's unix socket),
// each side's first frame a Hello naming the protocol version it speaks.

package holder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version this build speaks. 2: both ends prove
// they have the holder's key (proof.go).
const Version = 2

// MaxPayload bounds one frame, so a broken or hostile peer cannot make the
// other side allocate without limit.
const MaxPayload = 1 << 20

// Frame types. Lower case: data and small binary frames; upper case: JSON
// control frames.
const (
	TypeHello   byte = 'H' // both ways, first frame: HelloMsg
	TypeInput   byte = 'i' // gateway → holder: bytes for the shell
	TypeOutput  byte = 'o' // holder → gateway: 8-byte offset, then output bytes
	TypeResize  byte = 'z' // gateway → holder: 2-byte cols, 2-byte rows
	TypeClients byte = 'c' // gateway → holder: 4-byte count of this gateway's clients
	TypeAttach  byte = 'A' // gateway → holder: AttachMsg; the holder answers with Replay
	TypeReplay  byte = 'P' // holder → gateway: ReplayMsg header, then the replay bytes
	TypeReset   byte = 'R' // gateway → holder: ResetMsg; holder → every gateway: ResetMsg done
	TypeExit    byte = 'X' // holder → gateway: ExitMsg, the session ended
	TypeError   byte = 'E' // holder → gateway: ErrorMsg
	TypeEnd     byte = 'K' // gateway → holder: end the session (kill everything), then exit

	// TypePassed is not a gateway's frame: the holder sends it, empty, on
	// the unix socket to an attach process that passed it the exec's
	// stdin and stdout with the first frame (see attach.go), to say it
	// took them and speaks to the gateway through them from now on.
	TypePassed byte = 'F'
)

const headerLen = 5 // type, 4-byte big-endian payload length

// ErrTooLarge is returned for a frame whose payload exceeds MaxPayload.
var ErrTooLarge = errors.New("holder protocol: frame too large")

// Frame is one protocol frame. Payload is only valid until the next
// ReadFrame on the same Reader.
type Frame struct {
	Type    byte
	Payload []byte
}

// Reader reads frames from a stream, reusing one buffer.
type Reader struct {
	r   io.Reader
	hdr [headerLen]byte
	buf []byte
}

// NewReader returns a Reader on r (buffer r yourself if it is unbuffered).
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// ReadFrame reads the next frame. A stream that ends between frames gives
// io.EOF; inside a frame, io.ErrUnexpectedEOF.
func (r *Reader) ReadFrame() (Frame, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(r.hdr[1:])
	if n > MaxPayload {
		return Frame{}, fmt.Errorf("%w: %d bytes (type %q)", ErrTooLarge, n, r.hdr[0])
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	p := r.buf[:n]
	if _, err := io.ReadFull(r.r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return Frame{Type: r.hdr[0], Payload: p}, nil
}

// AppendFrame appends the encoding of one frame with the given payload
// parts to dst. Parts longer than MaxPayload in total are refused.
func AppendFrame(dst []byte, typ byte, parts ...[]byte) ([]byte, error) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > MaxPayload {
		return dst, fmt.Errorf("%w: %d bytes (type %q)", ErrTooLarge, n, typ)
	}
	dst = append(dst, typ, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(dst[len(dst)-4:], uint32(n))
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst, nil
}
