package agentwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := WriteRequest(&b, Request{Conn: 7, PID: 42, Comm: "ssh", Msg: []byte{11}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteReply(&b, Reply{Conn: 7, Msg: Failure[4:]}); err != nil {
		t.Fatal(err)
	}
	req, err := ReadRequest(&b)
	if err != nil || req.Conn != 7 || req.PID != 42 || req.Comm != "ssh" || !bytes.Equal(req.Msg, []byte{11}) {
		t.Fatalf("request %+v, %v", req, err)
	}
	rep, err := ReadReply(&b)
	if err != nil || rep.Conn != 7 || !bytes.Equal(rep.Msg, []byte{5}) {
		t.Fatalf("reply %+v, %v", rep, err)
	}
	if _, err := ReadReply(&b); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// TestBounds: a peer announcing more than the bounds gets an error, not an
// allocation of what it announced.
func TestBounds(t *testing.T) {
	var b bytes.Buffer
	b.Write(binary.BigEndian.AppendUint32(nil, 1))
	b.Write(binary.BigEndian.AppendUint32(nil, 1<<31))
	if _, err := ReadReply(&b); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge reply: %v, want ErrTooLarge", err)
	}
	b.Reset()
	b.Write(make([]byte, 8))
	b.WriteByte(200)
	if _, err := ReadRequest(&b); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("long name: %v, want ErrTooLarge", err)
	}
	if err := WriteMessage(io.Discard, make([]byte, MaxMessage+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("write huge: %v", err)
	}
	b.Reset()
	b.Write([]byte{0, 0, 0, 1, 0, 0, 0, 9, 1})
	if _, err := ReadReply(&b); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut reply: %v, want io.ErrUnexpectedEOF", err)
	}
}
