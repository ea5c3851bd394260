package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// An upload as rsync does it. gokrazy's receiver creates a directory with
// its mode less the umask and without its mtime, and the files it then
// writes into a directory change that directory's mtime (rsync touches its
// directories up once the files are in: touch_up_dirs); and it always
// takes its destination for a directory (rsync's get_local_name makes `rsync
// FILE host:NEWNAME` write NEWNAME). So the holder reads the file list
// before the server starts (a client's data to a receiver is not
// multiplexed at protocol 27, the only one gokrazy speaks), picks the
// destination as rsync would, and sets the directories' modes and mtimes
// once the transfer succeeded. A list it cannot follow is passed on as it
// came, and nothing else is done.

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

// rsyncGreeting is what gokrazy's server writes first, after it read the
// client's protocol version: its version (27) and its checksum seed (a
// constant 666 in v0.2.5), little-endian int32s.
var rsyncGreeting = []byte{27, 0, 0, 0, 0x9a, 0x02, 0, 0}

// receiverList is a receiver's stream read up to the end of its file
// list, before the server starts: the client sends the list only once it
// has the server's version, so the holder answers the greeting itself
// (and drops the server's own, byte for byte the same: dropGreeting),
// then hands the server every byte it read, and the rest.
type receiverList struct {
	raw     []byte // every byte read from the client, its version first
	greeted bool   // rsyncGreeting was sent
	dirs    []listedDir
	entries int
	// The first entry: whether it is a directory, and where its flags,
	// and what follows its name, are in raw.
	firstDir        bool
	flagsAt, restAt int
	// Where the entries' uids and gids are in raw (-o, -g).
	uidAt, gidAt []int
}

// countingReader counts the bytes the list's reader took (raw also holds
// what bufio read ahead).
type countingReader struct {
	r *bufio.Reader
	n int
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

// readReceiverList reads the client's version, answers the greeting on
// out, and reads the filter list (with --delete) and the file list
// (rsync/flist.c:receive_file_entry at protocol 27, as gokrazy reads it).
// The list is never nil: on an error its raw bytes are still to be passed
// on.
func readReceiverList(in io.Reader, out io.Writer, o flistOpts) (*receiverList, error) {
	var raw bytes.Buffer
	l := &receiverList{}
	cr := &countingReader{r: bufio.NewReader(io.TeeReader(in, &raw))}
	err := l.read(cr, out, o)
	l.raw = raw.Bytes()
	return l, err
}

func (l *receiverList) read(r *countingReader, out io.Writer, o flistOpts) error {
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
		return err
	}
	if _, err := out.Write(rsyncGreeting); err != nil {
		return err
	}
	l.greeted = true
	if o.delete {
		for {
			n, err := i32()
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if n < 0 || n > 4096 {
				return fmt.Errorf("filter rule of %d bytes", n)
			}
			if err := skip(int64(n)); err != nil {
				return err
			}
		}
	}
	const (
		sameMode, sameRdev, sameUID, sameGID = 1 << 1, 1 << 2, 1 << 3, 1 << 4
		sameName, longName, sameTime         = 1 << 5, 1 << 6, 1 << 7
		pathMax                              = 4096
	)
	var lastName string
	var lastMode uint32
	var lastTime int32
	for {
		flagsAt := r.n
		flags, err := r.ReadByte()
		if err != nil {
			return err
		}
		if flags == 0 {
			return nil
		}
		l1 := 0
		if flags&sameName != 0 {
			b, err := r.ReadByte()
			if err != nil {
				return err
			}
			l1 = int(b)
		}
		var l2 int
		if flags&longName != 0 {
			n, err := i32()
			if err != nil {
				return err
			}
			l2 = int(n)
		} else {
			b, err := r.ReadByte()
			if err != nil {
				return err
			}
			l2 = int(b)
		}
		if l1 > len(lastName) || l2 < 0 || l2 >= pathMax-l1 {
			return fmt.Errorf("file list name of %d+%d bytes", l1, l2)
		}
		name := make([]byte, l1+l2)
		copy(name, lastName[:l1])
		if _, err := io.ReadFull(r, name[l1:]); err != nil {
			return err
		}
		lastName = string(name)
		if l.entries == 0 {
			l.flagsAt, l.restAt = flagsAt, r.n
		}
		l.entries++
		if n, err := i32(); err != nil { // the length: an int64 when -1
			return err
		} else if n == -1 {
			if err := skip(8); err != nil {
				return err
			}
		}
		if flags&sameTime == 0 {
			if lastTime, err = i32(); err != nil {
				return err
			}
		}
		if flags&sameMode == 0 {
			m, err := i32()
			if err != nil {
				return err
			}
			lastMode = uint32(m)
		}
		for _, id := range []struct {
			on   bool
			same byte
			at   *[]int
		}{{o.uid, sameUID, &l.uidAt}, {o.gid, sameGID, &l.gidAt}} {
			if id.on && flags&id.same == 0 {
				*id.at = append(*id.at, r.n)
				if err := skip(4); err != nil {
					return err
				}
			}
		}
		const ifmt, ifdir, ifchr, ifblk, ififo, ifsock, iflnk = 0o170000, 0o040000, 0o020000, 0o060000, 0o010000, 0o140000, 0o120000
		switch t := lastMode & ifmt; {
		case o.devices && (t == ifchr || t == ifblk || t == ififo || t == ifsock):
			if flags&sameRdev == 0 {
				if err := skip(4); err != nil {
					return err
				}
			}
		case o.links && t == iflnk:
			n, err := i32()
			if err != nil {
				return err
			}
			if n < 0 || n > pathMax {
				return fmt.Errorf("symlink target of %d bytes", n)
			}
			if err := skip(int64(n)); err != nil {
				return err
			}
		case t == ifdir:
			if l.entries == 1 {
				l.firstDir = true
			}
			if len(l.dirs) >= maxListedDirs {
				return fmt.Errorf("over %d directories", maxListedDirs)
			}
			l.dirs = append(l.dirs, listedDir{name: filepath.Clean(lastName), mode: lastMode, mtime: time.Unix(int64(lastTime), 0)})
		}
	}
}

// localName is rsync's get_local_name for a list read whole: the bytes
// to hand the server and the destination to give it. A destination that
// is a directory takes the list; one file sent to a path that is not a
// directory (and does not end in /) becomes that path: the server writes
// into the path's directory, the entry renamed to the path's last name;
// anything else to a path that does not exist creates it as a directory.
func (l *receiverList) localName(dest string) ([]byte, string) {
	fi, err := os.Stat(dest)
	switch {
	case err == nil && fi.IsDir():
	case l.entries == 1 && !l.firstDir && !strings.HasSuffix(dest, "/") && filepath.Base(dest) != "/":
		return l.renameFirst(filepath.Base(dest)), filepath.Dir(dest)
	case errors.Is(err, fs.ErrNotExist):
		_ = os.Mkdir(dest, 0o777) // as rsync: the umask applies; a failure is the server's to report
	}
	return l.raw, dest
}

// ownAs makes every entry's owner uid and group gid, in raw: a login
// that is not root keeps nothing else (rsync ignores -o for it, and
// gokrazy, which decided it runs as root before the holder became the
// login, would fail to chown).
func (l *receiverList) ownAs(uid, gid uint32) {
	for _, at := range l.uidAt {
		binary.LittleEndian.PutUint32(l.raw[at:], uid)
	}
	for _, at := range l.gidAt {
		binary.LittleEndian.PutUint32(l.raw[at:], gid)
	}
}

// renameFirst is raw with the first entry's name replaced by name.
func (l *receiverList) renameFirst(name string) []byte {
	b := make([]byte, 0, len(l.raw)+len(name)+4)
	b = append(b, l.raw[:l.flagsAt]...)
	const sameName, longName = 1 << 5, 1 << 6
	b = append(b, l.raw[l.flagsAt]&^sameName|longName)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	return append(b, l.raw[l.restAt:]...)
}

// dropGreeting passes what the server writes to w, less its greeting
// (rsyncGreeting), which the holder already sent; a server that greets
// otherwise is refused.
type dropGreeting struct {
	w    io.Writer
	want []byte
}

func (d *dropGreeting) Write(p []byte) (int, error) {
	n := 0
	for len(d.want) > 0 && len(p) > 0 {
		if p[0] != d.want[0] {
			return n, errors.New("the rsync server's greeting is not the one the holder sent")
		}
		p, d.want, n = p[1:], d.want[1:], n+1
	}
	if len(p) == 0 {
		return n, nil
	}
	k, err := d.w.Write(p)
	return n + k, err
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
