package main

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// uploadPrefix starts the name of the fresh directory a gateway uploads
// this binary into (backend/exechost's uploadPrefix), from which it runs
// once with --install-as.
const uploadPrefix = ".termgate-upload-"

// dropUpload removes this binary and its upload directory when it exits
// without having installed itself: a holder directory refused (a planted
// symlink, another user's .termgate), a failed rename, a gateway gone
// before the key. Nothing else ever would, and each refused start would
// leave one more copy of the holder (megabytes) behind. After an install
// this binary runs from .termgate, so nothing is removed.
//
// The directory is opened without following a link and must still be this
// user's: in a parent others may write in (a 0777 emptyDir), it may have
// been swapped, and then nothing in it is removed.
func dropUpload() {
	self, err := os.Executable()
	if err != nil {
		return
	}
	dir := filepath.Dir(self)
	if !strings.HasPrefix(filepath.Base(dir), uploadPrefix) {
		return
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && int(st.Uid) == os.Geteuid() {
		_ = unix.Unlinkat(fd, filepath.Base(self), 0)
	}
	_ = unix.Close(fd)
	_ = unix.Rmdir(dir) // only when empty: nothing else of anyone's goes
}
