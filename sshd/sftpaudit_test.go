package sshd

import (
	"encoding/binary"
	"testing"

	"github.com/termgate/termgate/internal/sftpwire"
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
	feed := func(sc *sftpwire.Scanner, p []byte) {
		for i := range p {
			_, _ = sc.Write(p[i : i+1])
		}
	}
	big := make([]byte, sftpMaxHead+100)
	feed(c, sftpPacket(byte(sftpwire.TypeOpen), uint32(1), "/tmp/up", uint32(sftpwire.FlagWrite|0x08), uint32(0)))
	feed(s, sftpPacket(byte(sftpwire.TypeHandle), uint32(1), "h1"))
	feed(c, sftpPacket(byte(sftpwire.TypeWrite), uint32(2), "h1", uint64(0), string(big)))
	feed(c, sftpPacket(byte(sftpwire.TypeWrite), uint32(3), "h1", uint64(0), "abc"))
	feed(c, sftpPacket(byte(sftpwire.TypeOpen), uint32(4), "/etc/x", uint32(1), uint32(0)))
	feed(s, sftpPacket(byte(sftpwire.TypeStatus), uint32(4), uint32(2), "no such file", ""))
	feed(c, sftpPacket(byte(sftpwire.TypeClose), uint32(5), "h1"))
	feed(c, sftpPacket(byte(sftpwire.TypeOpen))) // short
	_, _ = c.Write(sftpPacket(byte(sftpwire.TypeOpen), uint32(6), "/tmp/down", uint32(1), uint32(0)))
	_, _ = s.Write(sftpPacket(byte(sftpwire.TypeHandle), uint32(6), "h2"))
	_, _ = c.Write(sftpPacket(byte(sftpwire.TypeRead), uint32(7), "h2", uint64(0), uint32(32768)))
	_, _ = s.Write(sftpPacket(byte(sftpwire.TypeData), uint32(7), "0123456789"))
	w.end()
	want := []sftpFile{{path: "/tmp/up", upload: true, bytes: int64(len(big) + 3)}, {path: "/tmp/down (incomplete)", bytes: 10}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}
}

// FuzzSFTPWatch: whatever both sides send, cut anywhere, the watch never
// panics, keeps its tables within sftpMaxTracked, and at the end records
// each file still open once.
func FuzzSFTPWatch(f *testing.F) {
	f.Add(sftpPacket(byte(sftpwire.TypeOpen), uint32(1), "/tmp/up", uint32(sftpwire.FlagWrite), uint32(0)),
		sftpPacket(byte(sftpwire.TypeHandle), uint32(1), "h1"), []byte{3, 1})
	f.Add(append(sftpPacket(byte(sftpwire.TypeRead), uint32(7), "h2", uint64(0), uint32(9)), 0, 0, 0),
		sftpPacket(byte(sftpwire.TypeData), uint32(7), "0123456789"), []byte{1})
	f.Fuzz(func(t *testing.T, client, server, cuts []byte) {
		emitted := 0
		w := newSFTPWatch(func(sftpFile, bool) { emitted++ })
		c, s := w.client(), w.server()
		cut := func(i int) int {
			if len(cuts) == 0 {
				return 1
			}
			return max(1, int(cuts[i%len(cuts)]))
		}
		for i := 0; len(client) > 0 || len(server) > 0; i++ {
			k := min(cut(i), len(client))
			if n, _ := c.Write(client[:k]); n != k {
				t.Fatalf("client scanner took %d of %d", n, k)
			}
			client = client[k:]
			k = min(cut(i+1), len(server))
			if n, _ := s.Write(server[:k]); n != k {
				t.Fatalf("server scanner took %d of %d", n, k)
			}
			server = server[k:]
		}
		w.mu.Lock()
		opens, handles, reads := len(w.opens), len(w.handles), len(w.reads)
		w.mu.Unlock()
		if opens > sftpMaxTracked || handles > sftpMaxTracked || reads > sftpMaxTracked {
			t.Fatalf("tables %d, %d, %d: over %d", opens, handles, reads, sftpMaxTracked)
		}
		before := emitted
		w.end()
		if emitted-before != handles {
			t.Fatalf("end recorded %d files, %d were open", emitted-before, handles)
		}
	})
}
