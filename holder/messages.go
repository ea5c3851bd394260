package holder

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// HelloMsg opens a connection in both directions.
type HelloMsg struct {
	// Proto is the protocol version the sender speaks.
	Proto int `json:"proto"`
	// Build identifies the sender's build (the holder's copy in an instance
	// is replaced only when it differs from the gateway's embedded one).
	Build string `json:"build,omitempty"`
	// Session, PID, Offset and Size describe the held session (holder →
	// gateway only).
	Session string `json:"session,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Offset  int64  `json:"offset,omitempty"`
	Cols    int    `json:"cols,omitempty"`
	Rows    int    `json:"rows,omitempty"`
	// Created is when the held session's shell started, in Unix
	// milliseconds (holder → gateway only; 0: unknown).
	Created int64 `json:"created,omitempty"`
	// Login is the instance user the held shell runs as (holder →
	// gateway only; "" the instance's default user): a session runs as
	// one login for its life, and an adopting gateway must know which.
	Login string `json:"login,omitempty"`
	// Gateway names the gateway (gateway → holder), for the holder's log.
	Gateway string `json:"gateway,omitempty"`
	// Clients is the gateway's client count from the start (gateway →
	// holder), as a Clients frame would say: a gateway starting a session
	// for a client says 1, so a short idle timeout cannot reap the
	// session before the client is counted.
	Clients int `json:"clients,omitempty"`
	// Nonce is the sender's fresh nonce (16 random bytes, hex), and Proof
	// (holder → gateway) the holder's proof that it has the key of the
	// deployment that started it (proof.go).
	Nonce string `json:"nonce,omitempty"`
	Proof string `json:"proof,omitempty"`
}

// AttachMsg asks for a replay: of the bytes from Since on when Session is
// still the held session and Since is still buffered, else the normal
// replay.
type AttachMsg struct {
	Session string `json:"session,omitempty"`
	Since   int64  `json:"since,omitempty"`
	// Proof is the gateway's proof that it has the holder's key
	// (proof.go): the holder takes nothing else before it.
	Proof string `json:"proof,omitempty"`
}

// ReplayMsg answers an AttachMsg; the replay bytes follow in the frame.
type ReplayMsg struct {
	Session string `json:"session"`
	// Offset is the number of the first output byte after the replay.
	Offset int64 `json:"offset"`
	// Start is the number of the replay's first byte: the replay is the
	// Offset-Start bytes of output frames that follow this one.
	Start int64 `json:"start"`
	Gap   bool  `json:"gap,omitempty"`
}

// ResetMsg asks for a reset (gateway → holder: By, NewSession) and reports
// one (holder → every gateway: OldSession, NewSession, By).
type ResetMsg struct {
	OldSession string `json:"old_session,omitempty"`
	NewSession string `json:"new_session"`
	By         string `json:"by,omitempty"`
}

// ExitMsg says the held session ended: the shell exited with Code, or
// Cause is "idle" (reaped) or "killed".
type ExitMsg struct {
	Session string `json:"session"`
	Code    int    `json:"code"`
	Cause   string `json:"cause,omitempty"`
}

// ErrorMsg reports a request the holder refused.
type ErrorMsg struct {
	Message string `json:"message"`
	// Proto is the holder's protocol version when it refuses a gateway's
	// hello for speaking another one.
	Proto int `json:"proto,omitempty"`
}

// ControlFrame encodes a JSON control message as a frame.
func ControlFrame(typ byte, msg any) ([]byte, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return AppendFrame(nil, typ, b)
}

// DecodeControl decodes a control frame's JSON payload into msg.
func DecodeControl(f Frame, msg any) error {
	if err := json.Unmarshal(f.Payload, msg); err != nil {
		return fmt.Errorf("holder protocol: bad %q frame: %w", f.Type, err)
	}
	return nil
}

// OutputFrame appends an output frame for data starting at offset off.
func OutputFrame(dst []byte, off int64, data []byte) ([]byte, error) {
	var o [8]byte
	binary.BigEndian.PutUint64(o[:], uint64(off))
	return AppendFrame(dst, TypeOutput, o[:], data)
}

// DecodeOutput splits an output frame into its offset and data.
func DecodeOutput(f Frame) (int64, []byte, error) {
	if len(f.Payload) < 8 {
		return 0, nil, fmt.Errorf("holder protocol: output frame of %d bytes has no offset", len(f.Payload))
	}
	off := int64(binary.BigEndian.Uint64(f.Payload))
	if off < 0 {
		return 0, nil, fmt.Errorf("holder protocol: negative output offset")
	}
	return off, f.Payload[8:], nil
}

// ResizeFrame encodes a window size.
func ResizeFrame(cols, rows int) []byte {
	var p [4]byte
	binary.BigEndian.PutUint16(p[:2], uint16(cols))
	binary.BigEndian.PutUint16(p[2:], uint16(rows))
	b, _ := AppendFrame(nil, TypeResize, p[:])
	return b
}

// DecodeResize decodes a window size; sizes outside 1..1000 are refused.
func DecodeResize(f Frame) (cols, rows int, err error) {
	if len(f.Payload) != 4 {
		return 0, 0, fmt.Errorf("holder protocol: resize frame of %d bytes, want 4", len(f.Payload))
	}
	cols = int(binary.BigEndian.Uint16(f.Payload[:2]))
	rows = int(binary.BigEndian.Uint16(f.Payload[2:]))
	if cols < 1 || cols > 1000 || rows < 1 || rows > 1000 {
		return 0, 0, fmt.Errorf("holder protocol: window size %dx%d outside 1..1000", cols, rows)
	}
	return cols, rows, nil
}

// ClientsFrame encodes how many clients a gateway has on the session.
func ClientsFrame(n int) []byte {
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], uint32(n))
	b, _ := AppendFrame(nil, TypeClients, p[:])
	return b
}

// DecodeClients decodes a client count.
func DecodeClients(f Frame) (int, error) {
	if len(f.Payload) != 4 {
		return 0, fmt.Errorf("holder protocol: clients frame of %d bytes, want 4", len(f.Payload))
	}
	n := binary.BigEndian.Uint32(f.Payload)
	if n > 1<<20 {
		return 0, fmt.Errorf("holder protocol: %d clients is not plausible", n)
	}
	return int(n), nil
}

// CheckHello decodes the peer's Hello and refuses another protocol
// version with an error that says what to do.
func CheckHello(f Frame) (HelloMsg, error) { return checkHello(f, Version) }

func checkHello(f Frame, want int) (HelloMsg, error) {
	var h HelloMsg
	if f.Type != TypeHello {
		return h, fmt.Errorf("holder protocol: first frame %q, want a hello", f.Type)
	}
	if err := DecodeControl(f, &h); err != nil {
		return h, err
	}
	if h.Proto != want {
		return h, &VersionError{Theirs: h.Proto, Build: h.Build, Ours: want}
	}
	return h, nil
}

// VersionError: the peer speaks another protocol version. The gateway
// leaves such a holder (and its user's shell) alone.
type VersionError struct {
	Theirs int
	Build  string
	Ours   int
}

func (e *VersionError) Error() string {
	build := ""
	if e.Build != "" {
		build = fmt.Sprintf(" (build %q)", clip(e.Build))
	}
	return fmt.Sprintf("holder protocol version %d%s is not %d: leaving that session alone; it ends by itself when idle, or restart the gateway version that started it", e.Theirs, build, e.Ours)
}
