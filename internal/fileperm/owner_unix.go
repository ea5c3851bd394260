//go:build unix

package fileperm

import (
	"io/fs"
	"syscall"
)

// owner returns the uid that owns fi's file.
func owner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// group returns the gid of fi's file.
func group(fi fs.FileInfo) (gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Gid), true
}
