package sshd

import (
	"io"
	"sync"

	"github.com/termgate/termgate/internal/sftpwire"
)

// A transfer cut under its client (the gateway shuts down, the instance
// stops) ends in a way sftp and scp can report: the client reads a
// stderr line saying why, every request it still waits for is answered
// with SSH_FX_FAILURE carrying the same words, and so is every request
// after that, until it gives up (sftp -b, scp: at once) and closes its
// end, or cutGrace passed; only then do the exit status and the close
// come. Closing at once made sftp die of SIGPIPE (exit 141) writing to
// the ssh that had exited, with no reason (stress round 4, D5).
//
// A reply can only be added between two of the server's packets: the
// copy to the client (copyPackets) writes whole packets only, holding a
// partial one (up to sftpMaxHeld) until its end arrives. A reply longer
// than that goes through in pieces; a cut in its middle gets the notice
// and the close only.

// sftpMaxHeld bounds the partial packet copyPackets holds: OpenSSH's
// sftp-server and the holder's replies are at most 256 KiB and a little.
const sftpMaxHeld = 256<<10 + 1024

// sftpStatusFailure is SSH_FX_FAILURE.
const sftpStatusFailure = 4

// sftpInFlight is the requests a transfer's client sent that the server
// has not answered. Fed by the scanners of both directions (their
// goroutines); mu is a leaf, held for no I/O.
type sftpInFlight struct {
	mu        sync.Mutex
	ids       map[uint32]struct{}
	over      bool // more than sftpMaxTracked at once: some cannot be answered
	versioned bool // the server's VERSION went through: requests carry ids
	answering bool // the server is gone: requests are answered here
}

func newSFTPInFlight() *sftpInFlight { return &sftpInFlight{ids: map[uint32]struct{}{}} }

// request records a request of the client's (a packet head); answer is
// true when the server is gone and it is to be answered here.
func (f *sftpInFlight) request(head []byte) (id uint32, answer bool) {
	r := sftpwire.NewFields(head)
	typ, id := r.Byte(), r.Uint32()
	if typ == sftpwire.TypeInit || !r.OK() {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answering {
		return id, true
	}
	if len(f.ids) < sftpMaxTracked {
		f.ids[id] = struct{}{}
	} else {
		f.over = true
	}
	return 0, false
}

// reply records a packet of the server's that reached the client.
func (f *sftpInFlight) reply(head []byte) {
	r := sftpwire.NewFields(head)
	typ, id := r.Byte(), r.Uint32()
	f.mu.Lock()
	defer f.mu.Unlock()
	if typ == sftpwire.TypeVersion {
		f.versioned = true
		return
	}
	if r.OK() {
		delete(f.ids, id)
	}
}

// takeOver makes the gateway the answerer from now on and returns the
// requests waiting for an answer; ok is false when they cannot all be
// answered (before VERSION, or too many), and then nothing is.
func (f *sftpInFlight) takeOver() (ids []uint32, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.versioned || f.over {
		return nil, false
	}
	f.answering = true
	for id := range f.ids {
		ids = append(ids, id)
	}
	f.ids = nil
	return ids, true
}

// sftpFailures writes SSH_FX_FAILURE replies to requests; wmu
// serializes such writes (a few dozen bytes each) between the two
// goroutines that answer.
type sftpFailures struct {
	wmu sync.Mutex
	w   io.Writer
	msg string
}

func (a *sftpFailures) answer(ids ...uint32) error {
	var b []byte
	for _, id := range ids {
		p := sftpwire.Begin(nil, sftpwire.TypeStatus)
		p = sftpwire.AppendUint32(p, id)
		p = sftpwire.AppendUint32(p, sftpStatusFailure)
		p = sftpwire.AppendString(p, a.msg)
		p = sftpwire.AppendString(p, "en")
		b = append(b, sftpwire.Finish(p)...)
	}
	if len(b) == 0 {
		return nil
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_, err := a.w.Write(b)
	return err
}

// copyPackets copies the server's stream src to the client dst, whole
// packets at a time (see above), and gives scan what it sends, before it
// sends it. It
// returns the bytes written and whether dst ended between two packets;
// failed when writing to dst failed (the client is gone). A partial
// packet held when src ends is dropped: it cannot be finished.
func copyPackets(dst io.Writer, src io.Reader, scan io.Writer) (n int64, between, failed bool) {
	var fr sftpwire.Framer
	var held []byte // read, not yet written: the start of a packet
	between = true
	rd := make([]byte, 32<<10)
	write := func(p []byte) bool {
		// Scanned before it is sent: a reply's effect (a new handle) must
		// be known before the client can act on it (its first write to
		// that handle), or that write goes uncounted.
		_, _ = scan.Write(p)
		k, err := dst.Write(p)
		n += int64(k)
		return err == nil
	}
	for {
		k, rerr := src.Read(rd)
		p := rd[:k]
		end := -1 // where the last packet ending in p ends
		for off := 0; off < len(p); {
			m, _, ended := fr.Next(p[off:])
			if off += m; ended {
				end = off
			}
		}
		if end >= 0 {
			held = append(held, p[:end]...)
			if !write(held) {
				return n, false, true
			}
			held, p, between = held[:0], p[end:], true
		}
		held = append(held, p...)
		if len(held) > sftpMaxHeld { // a long packet goes through in pieces
			if !write(held) {
				return n, false, true
			}
			held, between = held[:0], false
		}
		if rerr != nil {
			return n, between, false
		}
	}
}
