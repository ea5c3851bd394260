package holder

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The instance is untrusted, its unprivileged users included: nothing
// another user can write is ever run, connected to or believed as the
// holder. The holder's directory (DIR/.termgate) sits in directories such
// users can write (/tmp), so before the holder serves, installs itself or
// attaches, it checks that its directory, everything in it and its own
// binary are the user's it runs as (root's, or the container's user's),
// and, before an attach passes the gateway's stream on, that the socket's
// listener runs as that user too (SO_PEERCRED). Anything else is an
// *Untrusted: the gateway takes the directory for one that cannot hold
// and goes on to the next.
//
// Why this is enough: only the user itself (or root) can create a file
// owned by that user, and a directory of that user with no group or other
// write bit admits nobody else's files. The
// launch script (backend/exechost) checks the binary's owner before it
// runs it; the checks here are the rest (modes, the directory's entries,
// the listener), which a shell cannot do portably.

// ExitUntrusted is the status a holder command exits with when it refuses
// a directory, a file or a socket that is not its user's.
const ExitUntrusted = 3

// Untrusted says why a holder path is refused.
type Untrusted struct{ Why string }

func (e *Untrusted) Error() string { return "cannot hold here: " + e.Why }

func untrusted(format string, a ...any) error { return &Untrusted{Why: fmt.Sprintf(format, a...)} }

// MakeHome creates the holder's directory dir (mode 0700) when it is
// missing, and checks it (CheckHome).
func MakeHome(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := CheckHome(dir); err != nil {
		return err
	}
	// Ours, and nobody else could write in it: readable by others
	// (what mkdir -p leaves) is only made private.
	return os.Chmod(dir, 0o700)
}

// CheckHome checks that dir, the holder's directory, is a directory (not a
// symbolic link) owned by this process's user that no group or other may
// write in, and whose every entry is this user's.
//
// Its parent is not checked: a Kubernetes emptyDir /tmp is 0777 without
// the sticky bit, so another user may rename .termgate away and put their
// own in its place. That gains them nothing: every use checks again (the
// launch script runs the binary from the directory it entered and checked;
// an attach checks the directory, the socket and the listener before it
// connects), so their directory is refused at the next use; what such a
// swap can do is make a holder starting at that moment create its socket,
// lock and log (O_NOFOLLOW) in their directory, where no gateway connects.
func CheckHome(dir string) error {
	uid := os.Geteuid()
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("holder directory: %w", err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return untrusted("%s is not a directory (a symbolic link or a file)", dir)
	case int(st.Uid) != uid:
		return untrusted("%s belongs to uid %d, not to uid %d", dir, st.Uid, uid)
	case st.Mode&0o022 != 0:
		return untrusted("%s has mode %04o (group or other may write in it)", dir, st.Mode&0o7777)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("holder directory: %w", err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("holder directory: %w", err)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // gone since the listing (a racing holder's rename)
			}
			return fmt.Errorf("holder directory: %w", err)
		}
		if int(st.Uid) != uid {
			return untrusted("%s belongs to uid %d, not to uid %d", p, st.Uid, uid)
		}
	}
	return nil
}

// CheckSelf checks that the running binary is this user's and writable by
// nobody else.
func CheckSelf() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(self, &st); err != nil {
		return fmt.Errorf("the holder's binary: %w", err)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid || st.Mode&0o022 != 0 || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return untrusted("the binary %s (uid %d, mode %04o) is not uid %d's alone", self, st.Uid, st.Mode&0o7777, uid)
	}
	return nil
}

// checkSocket checks the socket file at path before a connection to it:
// a socket (not a link) of this user's in a checked directory.
func checkSocket(path string) error {
	if err := CheckHome(filepath.Dir(path)); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil // absent: the dial says "no holder answers"
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return untrusted("%s is not a socket", path)
	}
	return nil // its owner: CheckHome checked every entry
}

// checkPeer checks that the process listening at the other end of c runs
// as this process's user (a socket file of ours may still have been bound
// by someone else's process before the directory became ours).
func checkPeer(c *net.UnixConn, sock string) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("the listener's credentials on %s: %w", sock, cerr)
	}
	if uid := os.Geteuid(); int(cred.Uid) != uid {
		return untrusted("the process listening on %s (pid %d) runs as uid %d, not as uid %d", sock, cred.Pid, cred.Uid, uid)
	}
	return nil
}
