package sshd

import (
	"sync"

	"github.com/termgate/termgate/internal/sftpwire"
)

// The files of a transfer, for the audit trail: the gateway reads the SFTP
// packets (version 3, draft-ietf-secsh-filexfer-02) going through it both
// ways, without changing them, and records every file opened with its
// path, direction and bytes when it is closed (or the transfer ends). The
// paths and written bytes come from the client's requests; the read bytes
// from the instance's replies, which can only lie about bytes it sent.
// The framing is internal/sftpwire's, shared with the holder's shim.
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
func (w *sftpWatch) client() *sftpwire.Scanner {
	return &sftpwire.Scanner{On: w.request, Max: sftpMaxHead}
}

func (w *sftpWatch) server() *sftpwire.Scanner {
	return &sftpwire.Scanner{On: w.reply, Max: sftpMaxHead}
}

func (w *sftpWatch) request(p []byte) {
	r := sftpwire.NewFields(p)
	typ, id := r.Byte(), r.Uint32()
	var done *sftpFile
	w.mu.Lock()
	switch typ {
	case sftpwire.TypeOpen:
		path, ok := r.String()
		flags := r.Uint32()
		if !ok || !r.OK() {
			break
		}
		f := sftpFile{path: string(path), upload: flags&sftpwire.FlagWrite != 0}
		if len(w.opens) < sftpMaxTracked {
			w.opens[id] = f
		} else {
			f.untracked = true
			done = &f
		}
	case sftpwire.TypeRead:
		h, ok := r.String()
		f := w.handles[string(h)]
		switch {
		case !ok || f == nil:
		case len(w.reads) < sftpMaxTracked:
			w.reads[id] = string(h)
		default:
			f.uncounted = true // its data reply cannot be matched
		}
	case sftpwire.TypeWrite:
		h, ok := r.String()
		_ = r.Uint64()
		n := r.Uint32()
		if f := w.handles[string(h)]; ok && r.OK() && f != nil {
			f.bytes += int64(n)
		}
	case sftpwire.TypeClose:
		if h, ok := r.String(); ok {
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
	r := sftpwire.NewFields(p)
	typ, id := r.Byte(), r.Uint32()
	if !r.OK() {
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
	case sftpwire.TypeHandle:
		f, asked := w.opens[id]
		delete(w.opens, id)
		if h, ok := r.String(); ok && asked {
			if len(w.handles) < sftpMaxTracked {
				w.handles[string(h)] = &f
			} else {
				f.untracked = true
				untracked = &f
			}
		}
	case sftpwire.TypeStatus:
		delete(w.opens, id)
		delete(w.reads, id)
	case sftpwire.TypeData:
		h, asked := w.reads[id]
		delete(w.reads, id)
		n := r.Uint32()
		if f := w.handles[h]; asked && r.OK() && f != nil {
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
