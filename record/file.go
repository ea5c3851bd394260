package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafeName: an instance or session name that cannot be a file name
// inside the recording directory.
var ErrUnsafeName = errors.New("name cannot be used in a recording's path")

// checkName refuses what could leave its directory or hide: an empty name,
// one with a slash or NUL, "." and ".." (and every name starting with a
// dot), and names longer than a file name may be.
func checkName(name string) error {
	if name == "" || len(name) > 200 || strings.HasPrefix(name, ".") || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%q: %w", name, ErrUnsafeName)
	}
	return nil
}

// openDir opens (creating it 0700 when missing) the recording directory
// and checks that nobody but root and this user can change it.
func openDir(path string) (int, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return -1, fmt.Errorf("create recording directory: %w (set --record-dir to a writable directory)", err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open recording directory %s: %w", path, err)
	}
	if err := checkDir(fd, path); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// checkDir refuses a directory someone else could change: they could
// replace or remove recordings.
func checkDir(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	uid := uint32(os.Geteuid())
	if st.Uid != 0 && st.Uid != uid {
		return fmt.Errorf("recording directory %s is owned by uid %d, neither root nor the gateway's user (uid %d): that user could change recordings; run: chown %d %s", path, st.Uid, uid, uid, path)
	}
	if perm := st.Mode & 0o777; perm&0o022 != 0 {
		return fmt.Errorf("recording directory %s is writable by group or others (mode %04o): they could replace or remove recordings; run: chmod go-w %s", path, perm, path)
	}
	return nil
}

// create makes INSTANCE/NAME under the directory dirFD: the instance's
// directory 0700 (an existing one must not be a symbolic link nor
// changeable by others) and a new file 0600 (never an existing file, never
// through a symbolic link), locked (see appendTo).
func create(dirFD int, root, instance, name string) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ifd, err := openInstanceDir(dirFD, root, instance)
	if err != nil {
		return nil, err
	}
	defer unix.Close(ifd)
	path := filepath.Join(root, instance, name)
	fd, err := unix.Openat(ifd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("%s already exists: refused (a recording is never overwritten, and appended to only when its session is held: see appendTo): %w", path, fs.ErrExist)
		}
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := lock(fd); err != nil {
		// Another gateway opened the new file between its creation and
		// this lock, to continue it: it is that gateway's now.
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
