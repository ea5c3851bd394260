package holder

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	var stream []byte
	stream, _ = OutputFrame(stream, 1<<40, []byte("hello\r\n"))
	stream = append(stream, ResizeFrame(132, 43)...)
	stream = append(stream, ClientsFrame(3)...)
	hello, err := ControlFrame(TypeHello, HelloMsg{Proto: Version, Session: "abc", PID: 7, Offset: 99})
	if err != nil {
		t.Fatal(err)
	}
	stream = append(stream, hello...)
	r := NewReader(bytes.NewReader(stream))

	f, err := r.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	off, data, err := DecodeOutput(f)
	if err != nil || off != 1<<40 || string(data) != "hello\r\n" {
		t.Fatalf("output: %d %q %v", off, data, err)
	}
	f, _ = r.ReadFrame()
	if c, rows, err := DecodeResize(f); err != nil || c != 132 || rows != 43 {
		t.Fatalf("resize: %d %d %v", c, rows, err)
	}
	f, _ = r.ReadFrame()
	if n, err := DecodeClients(f); err != nil || n != 3 {
		t.Fatalf("clients: %d %v", n, err)
	}
	f, _ = r.ReadFrame()
	h, err := CheckHello(f)
	if err != nil || h.Session != "abc" || h.PID != 7 || h.Offset != 99 {
		t.Fatalf("hello: %+v %v", h, err)
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("end of stream: %v, want io.EOF", err)
	}
}

func TestBadFramesAreRefused(t *testing.T) {
	huge := []byte{TypeInput, 0xff, 0xff, 0xff, 0xff}
	if _, err := NewReader(bytes.NewReader(huge)).ReadFrame(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("4 GiB frame: %v, want ErrTooLarge", err)
	}
	cut := []byte{TypeInput, 0, 0, 0, 9, 'a'}
	if _, err := NewReader(bytes.NewReader(cut)).ReadFrame(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut frame: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, _, err := DecodeResize(Frame{Type: TypeResize, Payload: []byte{0, 0, 0, 24}}); err == nil {
		t.Fatal("0 columns accepted")
	}
	old, _ := ControlFrame(TypeHello, HelloMsg{Proto: Version + 1, Build: "v9"})
	f, _ := NewReader(bytes.NewReader(old)).ReadFrame()
	var ve *VersionError
	if _, err := CheckHello(f); !errors.As(err, &ve) || ve.Theirs != Version+1 {
		t.Fatalf("another version: %v, want a VersionError", err)
	}
}

// FuzzReadFrame feeds arbitrary streams (what a broken or hostile peer may
// send) to the frame reader and every decoder: none may panic, and a frame
// that decodes re-encodes to the same bytes.
func FuzzReadFrame(f *testing.F) {
	seed, _ := OutputFrame(nil, 5, []byte("x"))
	f.Add(seed)
	f.Add(ResizeFrame(80, 24))
	f.Add(ClientsFrame(1))
	h, _ := ControlFrame(TypeHello, HelloMsg{Proto: 1})
	f.Add(h)
	f.Add([]byte{TypeAttach, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{TypeInput, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for {
			fr, err := r.ReadFrame()
			if err != nil {
				return
			}
			if len(fr.Payload) > MaxPayload {
				t.Fatalf("payload of %d bytes passed the limit", len(fr.Payload))
			}
			again, err := AppendFrame(nil, fr.Type, fr.Payload)
			if err != nil || !bytes.Equal(again[headerLen:], fr.Payload) || again[0] != fr.Type {
				t.Fatalf("frame does not re-encode: %v", err)
			}
			switch fr.Type {
			case TypeOutput:
				_, _, _ = DecodeOutput(fr)
			case TypeResize:
				if c, rows, err := DecodeResize(fr); err == nil && (c < 1 || rows < 1 || c > 1000 || rows > 1000) {
					t.Fatalf("size %dx%d accepted", c, rows)
				}
			case TypeClients:
				_, _ = DecodeClients(fr)
			case TypeHello:
				_, _ = CheckHello(fr)
			default:
				var m AttachMsg
				_ = DecodeControl(fr, &m)
			}
		}
	})
}
