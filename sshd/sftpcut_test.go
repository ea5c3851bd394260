package sshd

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/termgate/termgate/internal/sftpwire"
)

// TestCopyPacketsWritesWholePackets: the server's stream, read a byte at a
// time and cut in a packet's middle, reaches the client as whole packets
// only, so a reply can follow; a packet longer than sftpMaxHeld goes
// through in pieces, and then none can.
func TestCopyPacketsWritesWholePackets(t *testing.T) {
	pkt := func(n int) []byte {
		return sftpwire.Finish(append(sftpwire.Begin(nil, sftpwire.TypeData), make([]byte, n)...))
	}
	whole := append(pkt(10), pkt(3)...)
	stream := append(append([]byte(nil), whole...), pkt(50)[:20]...) // cut in the third
	var dst, scanned bytes.Buffer
	n, between, failed := copyPackets(&dst, iotest.OneByteReader(bytes.NewReader(stream)), &scanned)
	if failed || !between || n != int64(len(whole)) || !bytes.Equal(dst.Bytes(), whole) || !bytes.Equal(scanned.Bytes(), whole) {
		t.Fatalf("wrote %d bytes (between %v, failed %v), want the %d of the two whole packets", n, between, failed, len(whole))
	}
	long := pkt(sftpMaxHeld + 100)
	dst.Reset()
	n, between, _ = copyPackets(&dst, io.LimitReader(bytes.NewReader(long), int64(len(long)-5)), io.Discard)
	if between || n == 0 {
		t.Fatalf("a long packet cut short: wrote %d bytes, between %v; want some and not between", n, between)
	}
}
