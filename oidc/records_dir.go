package oidc

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DirRecords keeps each record as a file of its own in a directory (0700),
// written atomically (a temporary file renamed into place) with mode 0600.
// Load reads only the files whose inode, modification time or size
// changed since the last Load: once a second on every gateway, most of
// them did not. (The inode: a record rewritten in the same clock tick
// with the same size keeps both others, and every write renames a new
// file into place.)
type DirRecords struct {
	dir string

	mu   sync.Mutex
	seen map[string]dirFile // what the last Load read, by file name
}

type dirFile struct {
	mod  time.Time
	size int64
	ino  uint64
	data []byte
}

// inode is the file's inode number (0 where the system does not say).
func inode(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// NewDirRecords opens (creating it if missing) the directory dir, which
// must be writable.
func NewDirRecords(dir string) (*DirRecords, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sign-in state directory: %w (it must be writable: the gateway keeps sign-ins, logouts and approved SSH keys there)", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sign-in state directory: %w", err)
	}
	return &DirRecords{dir: dir, seen: map[string]dirFile{}}, nil
}

// Load reads the directory. Its version hashes every file's name, inode,
// modification time and size, so it changes when any file does.
func (d *DirRecords) Load(context.Context) (map[string][]byte, string, error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, "", err
	}
	d.mu.Lock()
	prev := d.seen
	d.mu.Unlock()
	next := make(map[string]dirFile, len(ents))
	out := make(map[string][]byte, len(ents))
	v := sha256.New()
	for _, de := range ents { // sorted by name: the version does not depend on the order
		name := de.Name()
		if strings.HasPrefix(name, ".") || !de.Type().IsRegular() {
			continue // a temporary file being written, or not ours
		}
		info, err := de.Info()
		if err != nil {
			continue // gone meanwhile
		}
		f, ok := prev[name]
		if !ok || !f.mod.Equal(info.ModTime()) || f.size != info.Size() || f.ino != inode(info) {
			f = dirFile{mod: info.ModTime(), size: info.Size(), ino: inode(info), data: d.read(name)}
			if f.data == nil {
				continue // gone meanwhile
			}
		}
		next[name], out[name] = f, f.data
		var b [24]byte
		binary.BigEndian.PutUint64(b[:8], uint64(f.mod.UnixNano()))
		binary.BigEndian.PutUint64(b[8:16], uint64(f.size))
		binary.BigEndian.PutUint64(b[16:], f.ino)
		v.Write([]byte(name))
		v.Write(b[:])
	}
	d.mu.Lock()
	d.seen = next
	d.mu.Unlock()
	return out, hex.EncodeToString(v.Sum(nil)[:16]), nil
}

// read reads one file, at most one byte past maxRecord (which is then
// refused as malformed: a huge file is never read whole); nil if it is
// gone.
func (d *DirRecords) read(name string) []byte {
	f, err := os.Open(filepath.Join(d.dir, name))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// Put writes the file atomically: a temporary file (0600, synced) renamed
// into place, so a reader sees the old record or the new one, whole.
func (d *DirRecords) Put(_ context.Context, name string, data []byte) error {
	tmp, err := os.CreateTemp(d.dir, ".tmp-"+name+"-*")
	if err != nil {
		return fmt.Errorf("sign-in state: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: no such file
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(d.dir, name))
	}
	if err != nil {
		return fmt.Errorf("sign-in state: %w", err)
	}
	return nil
}

// Delete removes the files.
func (d *DirRecords) Delete(_ context.Context, names ...string) error {
	var first error
	for _, n := range names {
		if err := os.Remove(filepath.Join(d.dir, n)); err != nil && !os.IsNotExist(err) && first == nil {
			first = fmt.Errorf("sign-in state: %w", err)
		}
	}
	return first
}

// Where is the record's file.
func (d *DirRecords) Where(name string) string { return filepath.Join(d.dir, name) }

// String names the directory.
func (d *DirRecords) String() string { return d.dir }
