package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrBadSession: a session ID that is not one the registry makes (lower-case
// hex), refused before any path is built.
var ErrBadSession = errors.New("session IDs are lower-case hexadecimal")

// CheckSession refuses anything but 1 to 64 lower-case hex digits: session
// IDs are hex, so nothing else can name a recording.
func CheckSession(id string) error {
	if id == "" || len(id) > 64 {
		return ErrBadSession
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ErrBadSession
		}
	}
	return nil
}

// Open opens the recording DIR/INSTANCE/SESSION.cast for reading without
// following a symbolic link anywhere below DIR (the instance's directory and
// the file are opened with O_NOFOLLOW relative to their parents) and only
// when it is a regular file. A missing recording, and one that is a link or
// not a regular file, is fs.ErrNotExist: a caller answers both alike.
func Open(dir, instance, session string) (*os.File, error) {
	if err := checkName(instance); err != nil {
		return nil, err
	}
	if err := CheckSession(session); err != nil {
		return nil, err
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open recording directory %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	ifd, err := unix.Openat(dfd, instance, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, notExist(err, filepath.Join(dir, instance))
	}
	defer unix.Close(ifd)
	name := session + ".cast"
	path := filepath.Join(dir, instance, name)
	// O_NONBLOCK: a FIFO planted here must not block the open.
	fd, err := unix.Openat(ifd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, notExist(err, path)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file: %w", path, fs.ErrNotExist)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// notExist maps a missing file, a symbolic link (ELOOP) and a non-directory
// on the way to fs.ErrNotExist.
func notExist(err error, path string) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	return fmt.Errorf("open %s: %w", path, err)
}
