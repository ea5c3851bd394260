package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Directories as rsync -a promises them. gokrazy's receiver creates a
// directory with its mode less the umask and without its mtime, and the
// files it then writes into a directory change that directory's mtime;
// rsync touches its directories up once the files are in (touch_up_dirs).
// So the holder reads the file list on its way in (a client's data to a
// receiver is not multiplexed at protocol 27, the only one gokrazy
// speaks), keeps the directories' modes and mtimes, and sets them once
// the transfer succeeded. It only reads: a list it cannot follow touches
// nothing.

// maxListedDirs bounds the directories kept (a name up to PATH_MAX each).
const maxListedDirs = 1 << 20

// flistOpts are the options that shape the file list's entries and what
// comes before it (gokrazy's rsyncopts, for the words the client sends).
type flistOpts struct {
	uid, gid, devices, links, delete bool
	perms, times                     bool
}

func parseFlistOpts(opts []string) flistOpts {
	var o flistOpts
	for _, a := range opts {
		switch {
		case strings.HasPrefix(a, "--"):
			switch a {
			case "--delete":
				o.delete = true
			case "--owner":
				o.uid = true
			case "--group":
				o.gid = true
			case "--devices":
				o.devices = true
			case "--no-devices":
				o.devices = false
			case "--links":
				o.links = true
			case "--perms":
				o.perms = true
			case "--times":
				o.times = true
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range shortFlags(a) {
				switch c {
				case 'a':
					o.links, o.perms, o.times, o.uid, o.gid, o.devices = true, true, true, true, true, true
				case 'o':
					o.uid = true
				case 'g':
					o.gid = true
				case 'D':
					o.devices = true
				case 'l':
					o.links = true
				case 'p':
					o.perms = true
				case 't':
					o.times = true
				}
			}
		}
	}
	return o
}

// listedDir is a directory of the file list.
type listedDir struct {
	name  string
	mode  uint32
	mtime time.Time
}

// dirTap reads the file list from what the client sends, beside the
// server: Read passes every byte on and feeds it to the list's reader
// until that one is done (then it costs nothing).
type dirTap struct {
	r    io.Reader
	pw   *io.PipeWriter
	done bool // the reader stopped taking bytes; only Read's goroutine touches it

	wg   sync.WaitGroup
	dirs []listedDir
	err  error
}

func newDirTap(r io.Reader, o flistOpts) *dirTap {
	pr, pw := io.Pipe()
	t := &dirTap{r: r, pw: pw}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.dirs, t.err = readFlistDirs(bufio.NewReader(pr), o)
		// Whatever follows the list is not ours: the next Write fails
		// and the tap stops.
		_ = pr.CloseWithError(errListRead)
	}()
	return t
}

var errListRead = errors.New("file list read")

func (t *dirTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 && !t.done {
		if _, werr := t.pw.Write(p[:n]); werr != nil {
			t.done = true
		}
	}
	return n, err
}

// result ends the tap and returns the directories listed, or why not.
func (t *dirTap) result() ([]listedDir, error) {
	_ = t.pw.CloseWithError(io.ErrUnexpectedEOF)
	t.wg.Wait()
	return t.dirs, t.err
}

// readFlistDirs reads the protocol version, the filter list (with
// --delete) and the file list (rsync/flist.c:receive_file_entry at
// protocol 27, as gokrazy reads it) and returns its directories.
func readFlistDirs(r *bufio.Reader, o flistOpts) ([]listedDir, error) {
	i32 := func() (int32, error) {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, err
		}
		return int32(binary.LittleEndian.Uint32(b[:])), nil
	}
	skip := func(n int64) error {
		_, err := io.CopyN(io.Discard, r, n)
		return err
	}
	if _, err := i32(); err != nil { // the client's protocol version
		return nil, err
	}
	if o.delete {
		for {
			n, err := i32()
			if err != nil {
				return nil, err
			}
			if n == 0 {
				break
			}
			if n < 0 || n > 4096 {
				return nil, fmt.Errorf("filter rule of %d bytes", n)
			}
			if err := skip(int64(n)); err != nil {
				return nil, err
			}
		}
	}
	const (
		sameMode, sameRdev, sameUID, sameGID = 1 << 1, 1 << 2, 1 << 3, 1 << 4
		sameName, longName, sameTime         = 1 << 5, 1 << 6, 1 << 7
		pathMax                              = 4096
	)
	var dirs []listedDir
	var lastName string
	var lastMode uint32
	var lastTime int32
	for {
		flags, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if flags == 0 {
			return dirs, nil
		}
		l1 := 0
		if flags&sameName != 0 {
			b, err := r.ReadByte()
			if err != nil {
				return nil, err
			}
			l1 = int(b)
		}
		var l2 int
		if flags&longName != 0 {
			n, err := i32()
			if err != nil {
				return nil, err
			}
			l2 = int(n)
		} else {
			b, err := r.ReadByte()
			if err != nil {
				return nil, err
			}
			l2 = int(b)
		}
		if l1 > len(lastName) || l2 < 0 || l2 >= pathMax-l1 {
			return nil, fmt.Errorf("file list name of %d+%d bytes", l1, l2)
		}
		name := make([]byte, l1+l2)
		copy(name, lastName[:l1])
		if _, err := io.ReadFull(r, name[l1:]); err != nil {
			return nil, err
		}
		lastName = string(name)
		if n, err := i32(); err != nil { // the length: an int64 when -1
			return nil, err
		} else if n == -1 {
			if err := skip(8); err != nil {
				return nil, err
			}
		}
		if flags&sameTime == 0 {
			if lastTime, err = i32(); err != nil {
				return nil, err
			}
		}
		if flags&sameMode == 0 {
			m, err := i32()
			if err != nil {
				return nil, err
			}
			lastMode = uint32(m)
		}
		for _, id := range []struct {
			on   bool
			same byte
		}{{o.uid, sameUID}, {o.gid, sameGID}} {
			if id.on && flags&id.same == 0 {
				if err := skip(4); err != nil {
					return nil, err
				}
			}
		}
		const ifmt, ifdir, ifchr, ifblk, ififo, ifsock, iflnk = 0o170000, 0o040000, 0o020000, 0o060000, 0o010000, 0o140000, 0o120000
		switch t := lastMode & ifmt; {
		case o.devices && (t == ifchr || t == ifblk || t == ififo || t == ifsock):
			if flags&sameRdev == 0 {
				if err := skip(4); err != nil {
					return nil, err
				}
			}
		case o.links && t == iflnk:
			n, err := i32()
			if err != nil {
				return nil, err
			}
			if n < 0 || n > pathMax {
				return nil, fmt.Errorf("symlink target of %d bytes", n)
			}
			if err := skip(int64(n)); err != nil {
				return nil, err
			}
		case t == ifdir:
			if len(dirs) >= maxListedDirs {
				return nil, fmt.Errorf("over %d directories", maxListedDirs)
			}
			dirs = append(dirs, listedDir{name: filepath.Clean(lastName), mode: lastMode, mtime: time.Unix(int64(lastTime), 0)})
		}
	}
}

// touchUpDirs sets the listed directories' modes (with -p) and mtimes
// (with -t) under dest once the transfer is done. Names that would leave
// dest, and anything that is not a directory now, are left alone.
func touchUpDirs(dest string, dirs []listedDir, o flistOpts) error {
	var errs []error
	for _, d := range dirs {
		if filepath.IsAbs(d.name) || d.name == ".." || strings.HasPrefix(d.name, "../") {
			continue
		}
		p := filepath.Join(dest, d.name)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if o.perms {
			if err := os.Chmod(p, os.FileMode(d.mode&0o777)|unixModeBits(d.mode)); err != nil {
				errs = append(errs, err)
			}
		}
		if o.times {
			if err := os.Chtimes(p, d.mtime, d.mtime); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// unixModeBits are the setuid, setgid and sticky bits of a Unix mode as
// Go's.
func unixModeBits(m uint32) os.FileMode {
	var f os.FileMode
	if m&0o4000 != 0 {
		f |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		f |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		f |= os.ModeSticky
	}
	return f
}
