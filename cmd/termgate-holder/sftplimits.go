package main

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/termgate/termgate/internal/sftpwire"
)

// The limits@openssh.com extension, in front of pkg/sftp's server, which
// does not know it. OpenSSH's sftp and scp (8.7 and later) ask a server
// that announces it how large its reads and writes may be, and then move
// 255 KiB per request instead of 32 KiB: with 64 requests in flight that
// is 16 MiB on the way rather than 2 MiB, which is what a stream through
// an exec (gateway, engine, shim, holder and back for every answer) needs
// to keep moving. The shim answers the extension's request itself, adds
// the extension to the server's VERSION, and passes every other byte
// through untouched. The framing is internal/sftpwire's, shared with the
// gateway's audit.

const (
	limitsExtension = "limits@openssh.com"

	// sftpMaxMessage is pkg/sftp's largest message (its maxMsgLength);
	// sftpMaxData is the data a read or write may carry inside one, what
	// OpenSSH's own sftp-server announces (its message limit less 1024).
	sftpMaxMessage = 256 << 10
	sftpMaxData    = sftpMaxMessage - 1024

	// maxExtendedBuffered bounds the extended request the shim reads
	// whole to look at its name; a larger one (no extension needs that
	// much) goes through unread, for the server to refuse.
	maxExtendedBuffered = 64 << 10
	// maxVersionBuffered bounds the server's VERSION packet.
	maxVersionBuffered = 64 << 10
)

// limitsShim sits between the client's stream and the server.
type limitsShim struct {
	out io.Writer // the client's side

	mu      sync.Mutex      // guards the fields below and every write to out
	frames  sftpwire.Framer // the server's packet boundaries
	version []byte          // the VERSION packet, buffered until it is whole; nil once sent
	pending [][]byte        // replies waiting for the server's packet to end
}

func newLimitsShim(out io.Writer) *limitsShim {
	return &limitsShim{out: out, version: []byte{}}
}

// Write takes the server's output: packets, written in pieces (pkg/sftp
// writes a header, then a payload, under its own lock). It is passed on
// as it comes; the shim's own replies wait for a packet boundary.
func (s *limitsShim) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	// The first packet is the server's VERSION: collect it whole.
	for s.version != nil && len(p) > 0 {
		k, _, end := s.frames.Next(p)
		s.version = append(s.version, p[:k]...)
		p = p[k:]
		if size, ok := s.frames.Size(); ok && size > maxVersionBuffered {
			return 0, fmt.Errorf("sftp server's first packet is %d bytes: not a VERSION", size)
		}
		if !end {
			continue
		}
		first := s.version
		s.version = nil
		if _, err := s.out.Write(withLimitsExtension(first)); err != nil {
			return 0, err
		}
		if err := s.flush(); err != nil { // a boundary: what waited goes out
			return 0, err
		}
	}
	if err := s.pass(p); err != nil {
		return 0, err
	}
	return n, nil
}

// pass writes server bytes on, tracking the packet boundaries, and
// flushes the pending replies at each one. Called with mu held.
func (s *limitsShim) pass(p []byte) error {
	for len(p) > 0 {
		k, _, end := s.frames.Next(p) // up to the end of a length field or a packet
		if _, err := s.out.Write(p[:k]); err != nil {
			return err
		}
		p = p[k:]
		if end {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the pending replies; called with mu held, at a boundary.
func (s *limitsShim) flush() error {
	for _, r := range s.pending {
		if _, err := s.out.Write(r); err != nil {
			return err
		}
	}
	s.pending = nil
	return nil
}

// reply sends one of the shim's own packets, now when the server is
// between packets, else once its current packet is out.
func (s *limitsShim) reply(pkt []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == nil && s.frames.Between() {
		_, err := s.out.Write(pkt)
		return err
	}
	s.pending = append(s.pending, pkt)
	return nil
}

// withLimitsExtension is the VERSION packet pkt (length, type, version,
// extension pairs) with limits@openssh.com "1" added; anything else is
// returned as it is.
func withLimitsExtension(pkt []byte) []byte {
	if len(pkt) < 9 || pkt[4] != sftpwire.TypeVersion {
		return pkt
	}
	out := append([]byte(nil), pkt...)
	out = sftpwire.AppendString(out, limitsExtension)
	out = sftpwire.AppendString(out, "1")
	return sftpwire.Finish(out)
}

// limitsReply answers request id: the largest packet, read and write, and
// no limit on open handles (OpenSSH then keeps its 64 requests).
func limitsReply(id uint32) []byte {
	pkt := sftpwire.Begin(make([]byte, 0, 4+1+4+4*8), sftpwire.TypeExtendedReply)
	pkt = sftpwire.AppendUint32(pkt, id)
	pkt = sftpwire.AppendUint64(pkt, sftpMaxMessage)
	pkt = sftpwire.AppendUint64(pkt, sftpMaxData)
	pkt = sftpwire.AppendUint64(pkt, sftpMaxData)
	pkt = sftpwire.AppendUint64(pkt, 0)
	return sftpwire.Finish(pkt)
}

// filterRequests copies the client's packets from in to the server (srv),
// answering limits@openssh.com requests itself. Packets are streamed, not
// buffered, except small extended requests, whose name it reads. It
// returns at in's end (nil) or the first error.
func (s *limitsShim) filterRequests(in io.Reader, srv io.Writer) error {
	var hdr [sftpwire.HeaderLen]byte
	buf := make([]byte, 0, 512)
	for {
		n, err := sftpwire.ReadHeader(in, &hdr)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		size := int(n)
		if hdr[4] != sftpwire.TypeExtended || size > maxExtendedBuffered {
			if _, err := srv.Write(hdr[:]); err != nil {
				return err
			}
			if _, err := io.CopyN(srv, in, int64(size-1)); err != nil {
				return err
			}
			continue
		}
		buf = append(buf[:0], hdr[:]...)
		buf = append(buf, make([]byte, size-1)...)
		if _, err := io.ReadFull(in, buf[5:]); err != nil {
			return err
		}
		if id, name, ok := parseExtended(buf[5:]); ok && name == limitsExtension {
			if err := s.reply(limitsReply(id)); err != nil {
				return err
			}
			continue
		}
		if _, err := srv.Write(buf); err != nil {
			return err
		}
	}
}

// parseExtended reads an SSH_FXP_EXTENDED body: uint32 id, string name.
func parseExtended(b []byte) (id uint32, name string, ok bool) {
	r := sftpwire.NewFields(b)
	id = r.Uint32()
	n, ok := r.String()
	if !ok {
		return 0, "", false
	}
	return id, string(n), true
}
