package holder

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestDialFramesRoundTrip: what the writer copies reads back byte for byte
// through the reader, even one byte at a time, then io.EOF; a reader
// error arrives as a DialPeerError with its reason, control characters
// replaced.
func TestDialFramesRoundTrip(t *testing.T) {
	data := make([]byte, 3*DialFrameMax+17)
	_, _ = rand.Read(data)
	var wire bytes.Buffer
	if err := NewDialWriter(&wire).CopyFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(NewDialReader(iotest.OneByteReader(bytes.NewReader(wire.Bytes()))))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes of %d (err %v)", len(got), len(data), err)
	}

	wire.Reset()
	broken := io.MultiReader(strings.NewReader("some"), iotest.ErrReader(errors.New("connection reset\x1b[31m")))
	if err := NewDialWriter(&wire).CopyFrom(broken); err == nil {
		t.Fatal("CopyFrom of a failing reader: no error")
	}
	got, err = io.ReadAll(NewDialReader(&wire))
	var pe *DialPeerError
	if string(got) != "some" || !errors.As(err, &pe) || pe.Reason != "connection reset?[31m" {
		t.Fatalf("read %q, %v; want the bytes, then the reason", got, err)
	}
}

// TestDialReaderRefusesHostileFrames: the instance is not trusted: frames
// too big, unknown kinds and a stream that ends without an end frame are
// errors, never a silent EOF or a big allocation.
func TestDialReaderRefusesHostileFrames(t *testing.T) {
	for name, wire := range map[string]string{
		"huge data frame":    "d\x7f\xff\xff\xff",
		"empty data frame":   "d\x00\x00\x00\x00",
		"huge error frame":   "x\x7f\xff\xff\xff",
		"EOF with a payload": "e\x00\x00\x00\x01x",
		"unknown kind":       "z\x00\x00\x00\x00",
		"no end frame":       "d\x00\x00\x00\x02hi",
		"truncated frame":    "d\x00\x00\x00\x09hi",
		"truncated header":   "d\x00",
	} {
		_, err := io.ReadAll(NewDialReader(strings.NewReader(wire)))
		if err == nil { // io.ReadAll's nil is an io.EOF
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
}
