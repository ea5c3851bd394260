package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A held session (a durable one, whose shell outlives the gateway) keeps
// its ID when a restarted gateway adopts it, so its recording already
// exists: "one file spans every reconnect of its session". The gateway
// appends to it only when it is this gateway's own kind of file: a regular
// file (not a symbolic link), mode 0600, owned by the gateway's user, a
// complete asciicast v2 recording; and only while it holds an exclusive
// flock on it, so that two gateways sharing the directory never write into
// one file (the second leaves the session to the first). Anything else is
// left as it is, and the continuation goes to a new file named
// SESSION.continued-N.cast beside it.

// errLocked: another gateway (or another recording in this one) holds the
// file's lock: it records the session.
var errLocked = errors.New("another gateway records this session (it holds the recording's lock)")

// errMissing: there is no file to continue.
var errMissing = errors.New("no recording to continue")

// errCut: the recording reached --record-max-size; it stays cut.
var errCut = errors.New("the recording was cut at --record-max-size; the session stays unrecorded")

// errRefused wraps why an existing file is not appended to.
type errRefused struct{ why string }

func (e *errRefused) Error() string { return e.why }

// lock takes the exclusive flock on a recording without waiting.
func lock(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errLocked
		default:
			return fmt.Errorf("lock the recording: %w", err)
		}
	}
}

// openInstanceDir opens (creating it 0700) INSTANCE under dirFD, refusing
// a symbolic link and a directory others can change.
func openInstanceDir(dirFD int, root, instance string) (int, error) {
	if err := checkName(instance); err != nil {
		return -1, err
	}
	dirPath := filepath.Join(root, instance)
	if err := unix.Mkdirat(dirFD, instance, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("create %s: %w", dirPath, err)
	}
	ifd, err := unix.Openat(dirFD, instance, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("%s is not a directory (a symbolic link?): refused; remove it", dirPath)
		}
		return -1, fmt.Errorf("open %s: %w", dirPath, err)
	}
	if err := checkDir(ifd, dirPath); err != nil {
		unix.Close(ifd)
		return -1, err
	}
	return ifd, nil
}

// appendTo opens INSTANCE/NAME to continue it: locked, checked and read
// (see tail). errMissing when there is none; errLocked, errCut, or an
// *errRefused saying why it is not this gateway's to append to.
func appendTo(dirFD int, root, instance, name string, now time.Time) (*os.File, tail, error) {
	if err := checkName(name); err != nil {
		return nil, tail{}, err
	}
	ifd, err := openInstanceDir(dirFD, root, instance)
	if err != nil {
		return nil, tail{}, err
	}
	defer unix.Close(ifd)
	path := filepath.Join(root, instance, name)
	// O_NONBLOCK: a FIFO planted here must not block the open.
	fd, err := unix.Openat(ifd, name, unix.O_RDWR|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, tail{}, errMissing
	case errors.Is(err, unix.ELOOP):
		return nil, tail{}, &errRefused{path + " is a symbolic link"}
	case err != nil:
		return nil, tail{}, &errRefused{fmt.Sprintf("open %s: %v", path, err)}
	}
	f := os.NewFile(uintptr(fd), path)
	t, err := checkExisting(f, path, now)
	if err != nil {
		f.Close()
		return nil, tail{}, err
	}
	return f, t, nil
}

// checkExisting checks and locks an opened recording, then reads it.
func checkExisting(f *os.File, path string, now time.Time) (tail, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return tail{}, fmt.Errorf("stat %s: %w", path, err)
	}
	uid := uint32(os.Geteuid())
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return tail{}, &errRefused{path + " is not a regular file"}
	case st.Uid != uid:
		return tail{}, &errRefused{fmt.Sprintf("%s is owned by uid %d, not the gateway's user (uid %d)", path, st.Uid, uid)}
	case st.Mode&0o7777 != 0o600:
		return tail{}, &errRefused{fmt.Sprintf("%s has mode %04o, not 0600", path, st.Mode&0o7777)}
	case st.Nlink != 1:
		return tail{}, &errRefused{fmt.Sprintf("%s has %d hard links, not 1", path, st.Nlink)}
	}
	if err := lock(int(f.Fd())); err != nil {
		return tail{}, err
	}
	t, err := scan(f, now)
	if err != nil {
		if errors.Is(err, errNotRecording) {
			return tail{}, &errRefused{fmt.Sprintf("%s: %v", path, err)}
		}
		return tail{}, fmt.Errorf("read %s: %w", path, err)
	}
	if t.size != st.Size {
		// Someone wrote to it while it was read (not under the lock).
		return tail{}, &errRefused{fmt.Sprintf("%s changed while it was read", path)}
	}
	if t.cut {
		return tail{}, errCut
	}
	return t, nil
}

// continuedName is the name of the n-th new file a session's recording
// continues in when SESSION.cast cannot be appended to. The API serves
// only SESSION.cast (see Open): these are read from the directory.
func continuedName(session string, n int) string {
	return session + ".continued-" + strconv.Itoa(n) + ".cast"
}

// maxContinued bounds the continuation files a session gets.
const maxContinued = 100

// exists reports whether INSTANCE/NAME is there (as anything: a link too).
func (r *Recorder) exists(instance, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(r.dirFD, instance+"/"+name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}
