package sshd

import (
	"encoding/binary"
	"sync"
)

// The files of a transfer, for the audit trail: the gateway reads the SFTP
// packets (version 3, draft-ietf-secsh-filexfer-02) going through it both
// ways, without changing them, and records every file opened with its
// path, direction and bytes when it is closed (or the transfer ends). The
// paths and written bytes come from the client's requests; the read bytes
// from the instance's replies, which can only lie about bytes it sent.
// What it keeps is bounded: packet heads of at most sftpMaxHead bytes and
// at most sftpMaxTracked entries in each table. Beyond them a file is
// still recorded, never silently dropped (every transfer is an audit
// record): an open with no room is recorded at once, by the path its
// request named, as "untracked" with its bytes unknown (a client holding
// 1024 files open cannot hide the next ones), and a file whose reads could
// not all be counted is recorded with bytes_unknown instead of a count.

const (
	sftpMaxHead    = 4 + 4096 // the packet heads looked at: a path up to 4 KiB
	sftpMaxTracked = 1024

	fxpOpen   = 3
	fxpClose  = 4
	fxpRead   = 5
	fxpWrite  = 6
	fxpStatus = 101
	fxpHandle = 102
	fxpData   = 103

	fxfWrite = 0x02 // SSH_FXF_WRITE
)

// sftpFile is an open file as the audit sees it.
type sftpFile struct {
	path   string
	upload bool
	bytes  int64
	// untracked: recorded at its open, with no room to follow it.
	untracked bool
	// uncounted: some of its reads found no room, so bytes is short.
	uncounted bool
}

// auditDetail is the file's transfer record; complete is false for a file
// still open when the transfer ended.
func (f sftpFile) auditDetail(complete bool) []any {
	dir, result := "download", "ok"
	if f.upload {
		dir = "upload"
	}
	switch {
	case f.untracked:
		result = "untracked" // opened (or asked to be); nothing after that was followed
	case !complete:
		result = "incomplete" // still open when the transfer ended
	}
	d := []any{"path", clip(f.path, 1024), "direction", dir}
	if f.untracked || f.uncounted {
		d = append(d, "bytes_unknown", true)
	} else {
		d = append(d, "bytes", f.bytes)
	}
	return append(d, "result", result)
}

// sftpWatch keeps the transfer's open requests, handles and reads. Its two
// scanners run on the relay's two goroutines: each feeds it under mu (a
// leaf, held for no I/O; emit is called after).
type sftpWatch struct {
	mu      sync.Mutex
	opens   map[uint32]sftpFile  // OPEN request id → the file asked for
	handles map[string]*sftpFile // handle → the open file
	reads   map[uint32]string    // READ request id → its handle
	emit    func(f sftpFile, complete bool)
}

func newSFTPWatch(emit func(f sftpFile, complete bool)) *sftpWatch {
	return &sftpWatch{opens: map[uint32]sftpFile{}, handles: map[string]*sftpFile{}, reads: map[uint32]string{}, emit: emit}
}

// client is the scanner of the client's requests; server of the replies.
func (w *sftpWatch) client() *packetScanner { return &packetScanner{on: w.request} }
func (w *sftpWatch) server() *packetScanner { return &packetScanner{on: w.reply} }

func (w *sftpWatch) request(p []byte) {
	r := &fieldReader{b: p}
	typ, id := r.byte(), r.uint32()
	var done *sftpFile
	w.mu.Lock()
	switch typ {
	case fxpOpen:
		path, ok := r.string()
		flags := r.uint32()
		if !ok || !r.ok() {
			break
		}
		f := sftpFile{path: string(path), upload: flags&fxfWrite != 0}
		if len(w.opens) < sftpMaxTracked {
			w.opens[id] = f
		} else {
			f.untracked = true
			done = &f
		}
	case fxpRead:
		h, ok := r.string()
		f := w.handles[string(h)]
		switch {
		case !ok || f == nil:
		case len(w.reads) < sftpMaxTracked:
			w.reads[id] = string(h)
		default:
			f.uncounted = true // its data reply cannot be matched
		}
	case fxpWrite:
		h, ok := r.string()
		_ = r.uint64()
		n := r.uint32()
		if f := w.handles[string(h)]; ok && r.ok() && f != nil {
			f.bytes += int64(n)
		}
	case fxpClose:
		if h, ok := r.string(); ok {
			if f := w.handles[string(h)]; f != nil {
				done = f
				delete(w.handles, string(h))
			}
		}
	}
	w.mu.Unlock()
	if done != nil {
		w.emit(*done, true)
	}
}

func (w *sftpWatch) reply(p []byte) {
	r := &fieldReader{b: p}
	typ, id := r.byte(), r.uint32()
	if !r.ok() {
		return
	}
	var untracked *sftpFile
	w.mu.Lock()
	defer func() {
		w.mu.Unlock()
		if untracked != nil {
			w.emit(*untracked, true)
		}
	}()
	switch typ {
	case fxpHandle:
		f, asked := w.opens[id]
		delete(w.opens, id)
		if h, ok := r.string(); ok && asked {
			if len(w.handles) < sftpMaxTracked {
				w.handles[string(h)] = &f
			} else {
				f.untracked = true
				untracked = &f
			}
		}
	case fxpStatus:
		delete(w.opens, id)
		delete(w.reads, id)
	case fxpData:
		h, asked := w.reads[id]
		delete(w.reads, id)
		n := r.uint32()
		if f := w.handles[h]; asked && r.ok() && f != nil {
			f.bytes += int64(n)
		}
	}
}

// end records the files still open when the transfer ended.
func (w *sftpWatch) end() {
	w.mu.Lock()
	left := make([]sftpFile, 0, len(w.handles))
	for _, f := range w.handles {
		left = append(left, *f)
	}
	w.handles = map[string]*sftpFile{}
	w.mu.Unlock()
	for _, f := range left {
		w.emit(f, false)
	}
}

// packetScanner is an io.Writer that splits an SFTP stream into packets
// and calls on with each packet's head (its first sftpMaxHead bytes after
// the length), skipping the rest.
type packetScanner struct {
	on   func(head []byte)
	buf  []byte // the current packet's length and head so far
	skip uint32 // bytes of the current packet still to skip
}

func (s *packetScanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if s.skip > 0 {
			k := min(uint32(len(p)), s.skip)
			s.skip -= k
			p = p[k:]
			continue
		}
		if len(s.buf) < 4 {
			k := min(4-len(s.buf), len(p))
			s.buf = append(s.buf, p[:k]...)
			p = p[k:]
			continue
		}
		size := binary.BigEndian.Uint32(s.buf)
		head := min(size, sftpMaxHead)
		k := min(int(head)-(len(s.buf)-4), len(p))
		s.buf = append(s.buf, p[:k]...)
		p = p[k:]
		if len(s.buf)-4 == int(head) {
			s.on(s.buf[4:])
			s.skip = size - head
			s.buf = s.buf[:0]
		}
	}
	return n, nil
}

// fieldReader reads a packet's fields; a short packet makes every later
// field zero and ok false.
type fieldReader struct {
	b   []byte
	bad bool
}

func (r *fieldReader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *fieldReader) byte() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *fieldReader) uint32() uint32 {
	if p := r.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *fieldReader) uint64() uint64 {
	if p := r.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// string reads an SSH string (a uint32 length, then the bytes).
func (r *fieldReader) string() ([]byte, bool) {
	n := r.uint32()
	if r.bad || uint64(n) > uint64(len(r.b)) {
		r.bad = true
		return nil, false
	}
	return r.take(int(n)), true
}

func (r *fieldReader) ok() bool { return !r.bad }
