package holder

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// A tmp cleaner, or an `rm -rf /tmp/*` in the instance, may delete the
// holder's socket, or its whole directory, under a live holder (issue 20,
// D3). The gateways already connected keep their streams, but no gateway
// could ever connect again: the shell would be unreachable until the idle
// timeout. The holder holds the socket's lock, so it alone may put the
// socket back: every socketCheckEvery it checks that the path is still its
// listener's (the same inode), and when not, listens there again: it makes
// the directory again with the same trust checks (MakeHome: a directory
// another user planted is refused, and checked again next time), takes the
// lock again when the lock file went with the directory (if another holder
// took that path's lock meanwhile, that holder owns the path now: this one
// stops watching and is reachable only by the gateways still connected,
// until its idle timeout), then replaces the socket.
var socketCheckEvery = time.Second // a variable for tests

// fileID identifies a file: a path whose ID changed is another file.
type fileID struct{ dev, ino uint64 }

func pathID(path string) (fileID, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true
}

func fdID(f *os.File) fileID {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}
	}
	return fileID{uint64(st.Dev), st.Ino}
}

// listenAt listens on the unix socket path (mode 0600) and returns the
// socket file's ID. The listener never unlinks path on Close: by then the
// path may be another listener's (removeSocket does it, checking).
func listenAt(path string) (*net.UnixListener, fileID, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fileID{}, fmt.Errorf("holder: listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	_ = os.Chmod(path, 0o600)
	id, _ := pathID(path)
	return ln, id, nil
}

// watchSocket puts the socket back whenever it is gone or replaced, until
// the daemon ends. lock is the lock Serve took; locks taken again are
// closed when it returns.
func (h *holder) watchSocket(lock *os.File) {
	t := time.NewTicker(socketCheckEvery)
	defer t.Stop()
	var taken []*os.File
	defer func() {
		for _, f := range taken {
			f.Close()
		}
	}()
	failing := false // log a failure once until it heals
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
		}
		h.mu.Lock()
		want := h.sockID
		h.mu.Unlock()
		if got, ok := pathID(h.cfg.Socket); ok && got == want {
			continue
		}
		relocked, err := h.relisten(lock)
		if relocked != nil {
			lock = relocked
			taken = append(taken, relocked)
		}
		switch {
		case errors.Is(err, ErrAlreadyHeld):
			h.log.Warn("the socket was deleted and another holder now holds its path; this session is reachable only by the gateways still connected, until its idle timeout", "socket", h.cfg.Socket)
			return
		case err != nil && !failing:
			h.log.Warn("the socket was deleted and cannot be made again yet; retrying", "socket", h.cfg.Socket, "err", err)
			failing = true
		case err == nil:
			h.log.Warn("the socket was deleted (a tmp cleaner?); listening on it again", "socket", h.cfg.Socket)
			failing = false
		}
	}
}

// relisten makes the socket's directory, lock and socket again. It
// returns the lock it took again, if any (the lock file was deleted).
func (h *holder) relisten(lock *os.File) (*os.File, error) {
	sock := h.cfg.Socket
	if err := MakeHome(filepath.Dir(sock)); err != nil {
		return nil, err
	}
	var relocked *os.File
	if id, ok := pathID(sock + ".lock"); !ok || id != fdID(lock) {
		f, err := lockSocket(sock + ".lock")
		if err != nil {
			return nil, err
		}
		relocked = f
	}
	_ = os.Remove(sock) // ours to replace: this holder holds the lock
	ln, id, err := listenAt(sock)
	if err != nil {
		return relocked, err
	}
	h.mu.Lock()
	if h.ended { // Serve is closing the listener: this one would stay open
		h.mu.Unlock()
		ln.Close()
		return relocked, nil
	}
	old := h.ln
	h.ln, h.sockID = ln, id
	h.mu.Unlock()
	old.Close() // its accept loop ends
	h.wg.Go(func() { h.acceptOn(ln) })
	return relocked, nil
}

// closeListener closes the current listener (after finish: no new one
// replaces it then).
func (h *holder) closeListener() {
	h.mu.Lock()
	ln := h.ln
	h.mu.Unlock()
	ln.Close()
}

// removeSocket removes the socket when the path is still this holder's.
func (h *holder) removeSocket() {
	h.mu.Lock()
	id := h.sockID
	h.mu.Unlock()
	if got, ok := pathID(h.cfg.Socket); ok && got == id {
		_ = os.Remove(h.cfg.Socket)
	}
}
