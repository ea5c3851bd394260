package sshd

import (
	"encoding/binary"
	"testing"
)

// sftpPacket builds a packet: its length, then fields (byte, uint32,
// uint64 or string).
func sftpPacket(fields ...any) []byte {
	var body []byte
	for _, f := range fields {
		switch v := f.(type) {
		case byte:
			body = append(body, v)
		case uint32:
			body = binary.BigEndian.AppendUint32(body, v)
		case uint64:
			body = binary.BigEndian.AppendUint64(body, v)
		case string:
			body = binary.BigEndian.AppendUint32(body, uint32(len(v)))
			body = append(body, v...)
		}
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestSFTPWatchRecordsFiles: an open for writing, two writes and a close
// (fed a byte at a time, as the relay may), an open for reading whose data
// replies count, a failed open, a packet too short to parse and one longer
// than the head: one record per file with its bytes, nothing else.
func TestSFTPWatchRecordsFiles(t *testing.T) {
	var got []sftpFile
	w := newSFTPWatch(func(f sftpFile, complete bool) {
		if !complete {
			f.path += " (incomplete)"
		}
		got = append(got, f)
	})
	c, s := w.client(), w.server()
	feed := func(sc *packetScanner, p []byte) {
		for i := range p {
			_, _ = sc.Write(p[i : i+1])
		}
	}
	big := make([]byte, sftpMaxHead+100)
	feed(c, sftpPacket(byte(fxpOpen), uint32(1), "/tmp/up", uint32(fxfWrite|0x08), uint32(0)))
	feed(s, sftpPacket(byte(fxpHandle), uint32(1), "h1"))
	feed(c, sftpPacket(byte(fxpWrite), uint32(2), "h1", uint64(0), string(big)))
	feed(c, sftpPacket(byte(fxpWrite), uint32(3), "h1", uint64(0), "abc"))
	feed(c, sftpPacket(byte(fxpOpen), uint32(4), "/etc/x", uint32(1), uint32(0)))
	feed(s, sftpPacket(byte(fxpStatus), uint32(4), uint32(2), "no such file", ""))
	feed(c, sftpPacket(byte(fxpClose), uint32(5), "h1"))
	feed(c, sftpPacket(byte(fxpOpen))) // short
	_, _ = c.Write(sftpPacket(byte(fxpOpen), uint32(6), "/tmp/down", uint32(1), uint32(0)))
	_, _ = s.Write(sftpPacket(byte(fxpHandle), uint32(6), "h2"))
	_, _ = c.Write(sftpPacket(byte(fxpRead), uint32(7), "h2", uint64(0), uint32(32768)))
	_, _ = s.Write(sftpPacket(byte(fxpData), uint32(7), "0123456789"))
	w.end()
	want := []sftpFile{{path: "/tmp/up", upload: true, bytes: int64(len(big) + 3)}, {path: "/tmp/down (incomplete)", bytes: 10}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}
}
