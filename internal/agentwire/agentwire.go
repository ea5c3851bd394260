// Package agentwire is the framing between the in-instance agent socket
// (termgate-holder agent) and the gateway: one exec stream carries the
// requests of every local connection to the socket, each framed with the
// connection's number and, when the helper could tell, the requesting
// process; the gateway answers each with a reply frame naming the same
// connection. The agent messages themselves (the OpenSSH agent protocol's
// uint32 length and body) pass through unchanged.
//
// Both sides bound what they read: a frame's message is at most
// MaxMessage bytes (OpenSSH's agent limit), a process name at most
// MaxComm, so a hostile peer cannot make the other allocate more.
package agentwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Socket is where session's forwarded agent listens inside its instance
// (the shell's SSH_AUTH_SOCK): fixed by the session id, so that it stays
// right for the session's life whichever client answers behind it. A
// held session's holder sets it for each shell it starts, a reset's
// included.
func Socket(session string) string {
	return "/tmp/.termgate-agent-" + session + "/agent.sock"
}

// MaxMessage bounds one agent message (OpenSSH's AGENT_MAX_LEN is 256
// KiB).
const MaxMessage = 256 << 10

// MaxComm bounds the requesting process's name (Linux's is 15 bytes).
const MaxComm = 64

// Failure is the agent protocol's SSH_AGENT_FAILURE reply, with its
// length: the answer when no client's agent can be asked.
var Failure = []byte{0, 0, 0, 1, 5}

// Request is one agent request from a connection to the socket.
type Request struct {
	Conn uint32 // the helper's number for the local connection
	PID  uint32 // the requesting process (SO_PEERCRED), 0 unknown
	Comm string // its /proc/PID/comm, "" unknown
	Msg  []byte // the agent message's body (without its length)
}

// Reply is the answer to a Request of the same Conn.
type Reply struct {
	Conn uint32
	Msg  []byte // the agent message's body (without its length)
}

// ErrTooLarge: a frame announced more than the bounds allow.
var ErrTooLarge = errors.New("agent message too large")

// WriteRequest writes r as one frame.
func WriteRequest(w io.Writer, r Request) error {
	comm := r.Comm
	if len(comm) > MaxComm {
		comm = comm[:MaxComm]
	}
	if len(r.Msg) > MaxMessage {
		return ErrTooLarge
	}
	b := make([]byte, 0, 13+len(comm)+len(r.Msg))
	b = binary.BigEndian.AppendUint32(b, r.Conn)
	b = binary.BigEndian.AppendUint32(b, r.PID)
	b = append(b, byte(len(comm)))
	b = append(b, comm...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Msg)))
	b = append(b, r.Msg...)
	_, err := w.Write(b)
	return err
}

// ReadRequest reads one frame WriteRequest wrote.
func ReadRequest(r io.Reader) (Request, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Request{}, err
	}
	req := Request{Conn: binary.BigEndian.Uint32(h[0:4]), PID: binary.BigEndian.Uint32(h[4:8])}
	n := int(h[8])
	if n > MaxComm {
		return Request{}, fmt.Errorf("process name of %d bytes: %w", n, ErrTooLarge)
	}
	comm := make([]byte, n)
	if _, err := io.ReadFull(r, comm); err != nil {
		return Request{}, unexpected(err)
	}
	req.Comm = string(comm)
	msg, err := ReadMessage(r)
	req.Msg = msg
	return req, unexpected(err)
}

// WriteReply writes r as one frame.
func WriteReply(w io.Writer, r Reply) error {
	if len(r.Msg) > MaxMessage {
		return ErrTooLarge
	}
	b := make([]byte, 0, 8+len(r.Msg))
	b = binary.BigEndian.AppendUint32(b, r.Conn)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Msg)))
	b = append(b, r.Msg...)
	_, err := w.Write(b)
	return err
}

// ReadReply reads one frame WriteReply wrote.
func ReadReply(r io.Reader) (Reply, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Reply{}, err
	}
	msg, err := ReadMessage(r)
	return Reply{Conn: binary.BigEndian.Uint32(h[:]), Msg: msg}, unexpected(err)
}

// ReadMessage reads one agent message (uint32 length, body) and returns
// its body; a length over MaxMessage is ErrTooLarge.
func ReadMessage(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > MaxMessage {
		return nil, fmt.Errorf("%d bytes: %w", n, ErrTooLarge)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, unexpected(err)
	}
	return msg, nil
}

// WriteMessage writes body as one agent message (uint32 length, body).
func WriteMessage(w io.Writer, body []byte) error {
	if len(body) > MaxMessage {
		return ErrTooLarge
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	_, err := w.Write(append(b, body...))
	return err
}

// unexpected turns an EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
