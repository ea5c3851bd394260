package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestParseRsyncArgs: the holder takes only server lines, never a daemon,
// and with --read-only only a download that deletes nothing.
func TestParseRsyncArgs(t *testing.T) {
	ok := [][]string{
		{"--server", "-logDtpre.iLsfxCIvu", ".", "/tmp/x/"},
		{"--server", "--sender", "-logDtpre.iLsfxCIvu", ".", "a", "b"},
		{"--server", "-T", ".", "-logDtpr", ".", "dst"}, // -T's value is no separator
	}
	for _, args := range ok {
		if _, err := parseRsyncArgs(args, false); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	r, _ := parseRsyncArgs(ok[2], false)
	if len(r.paths) != 1 || r.paths[0] != "dst" {
		t.Errorf("%q: paths %q", ok[2], r.paths)
	}
	for _, tc := range []struct {
		args     []string
		readOnly bool
	}{
		{[]string{"-logDtpr", ".", "x"}, false},
		{[]string{"--server", "--daemon", ".", "x"}, false},
		{[]string{"--server", "--config=/x", ".", "x"}, false},
		{[]string{"--server", "-slogDtpr", ".", "x"}, false}, // protect-args
		{[]string{"--server", "-logDtpr", "x"}, false},
		{[]string{"--server", "-logDtpr", "."}, false},
		{[]string{"--server", "-logDtpr", ".", "x"}, true},
		{[]string{"--server", "--sender", "--remove-source-files", ".", "x"}, true},
	} {
		if _, err := parseRsyncArgs(tc.args, tc.readOnly); err == nil {
			t.Errorf("%q (read-only %v) accepted", tc.args, tc.readOnly)
		}
	}
	if _, err := parseRsyncArgs([]string{"--server", "--sender", "-logDtpre.iLsfxC", ".", "x"}, true); err != nil {
		t.Errorf("a read-only download: %v", err)
	}
}

func TestAbsFrom(t *testing.T) {
	for p, want := range map[string]string{
		"rel": "/home/u/rel", "rel/": "/home/u/rel/", ".": "/home/u/", "": "/home/u/",
		"/abs": "/abs", "~": "/home/u", "~/x/": "/home/u/x/",
	} {
		if got := absFrom("/home/u", p); got != want {
			t.Errorf("absFrom(%q) = %q, want %q", p, got, want)
		}
	}
}

// flistEntry appends one protocol-27 file list entry (long name, all
// fields sent) to b.
func flistEntry(b *bytes.Buffer, name string, mode uint32, mtime int32, link string, o flistOpts) {
	i32 := func(v int32) { _ = binary.Write(b, binary.LittleEndian, v) }
	b.WriteByte(1 << 6) // long name
	i32(int32(len(name)))
	b.WriteString(name)
	i32(-1) // a length over 32 bits
	_ = binary.Write(b, binary.LittleEndian, int64(1<<33))
	i32(mtime)
	i32(int32(mode))
	if o.uid {
		i32(1000)
	}
	if o.gid {
		i32(1000)
	}
	if link != "" {
		i32(int32(len(link)))
		b.WriteString(link)
	}
}

// TestReadReceiverList: the directories of a file list, the greeting
// answered, every byte kept to pass on; a truncated or hostile list is an
// error, with what was read still kept.
func TestReadReceiverList(t *testing.T) {
	o := parseFlistOpts([]string{"--server", "-logDtpre.iLsfxC", "--delete"})
	if !o.uid || !o.gid || !o.links || !o.times || !o.perms || !o.delete || !o.devices {
		t.Fatalf("options: %+v", o)
	}
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, int32(32)) // protocol
	_ = binary.Write(&b, binary.LittleEndian, int32(3))  // a filter rule
	b.WriteString("- x")
	_ = binary.Write(&b, binary.LittleEndian, int32(0))
	flistEntry(&b, ".", 0o40755, 100, "", o)
	flistEntry(&b, "f", 0o100644, 200, "", o)
	flistEntry(&b, "l", 0o120777, 300, "f", o)
	flistEntry(&b, "sub", 0o42750, 400, "", o)
	b.WriteByte(0)
	list := b.Bytes()
	stream := append(append([]byte{}, list...), []byte("what follows the list")...)

	in := bytes.NewReader(stream)
	var greeting bytes.Buffer
	l, err := readReceiverList(in, &greeting, o)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(in)
	if !bytes.Equal(append(l.raw, rest...), stream) || !bytes.Equal(greeting.Bytes(), rsyncGreeting) || !l.greeted {
		t.Fatalf("raw+rest differs from the stream, or greeting %x", greeting.Bytes())
	}
	dirs := l.dirs
	if l.entries != 4 || !l.firstDir || len(dirs) != 2 || dirs[0].name != "." || dirs[1].name != "sub" || dirs[1].mode != 0o42750 || dirs[1].mtime.Unix() != 400 {
		t.Fatalf("list %+v", l)
	}

	// A login that is not root owns what it receives: every uid and gid
	// in the list becomes its own, nothing else moves.
	if len(l.uidAt) != 4 || len(l.gidAt) != 4 {
		t.Fatalf("uids at %v, gids at %v; want 4 each", l.uidAt, l.gidAt)
	}
	saved := bytes.Clone(l.raw)
	l.ownAs(5, 6)
	for i := range l.uidAt {
		if binary.LittleEndian.Uint32(l.raw[l.uidAt[i]:]) != 5 || binary.LittleEndian.Uint32(l.raw[l.gidAt[i]:]) != 6 {
			t.Fatalf("entry %d not owned by 5:6", i)
		}
		copy(l.raw[l.uidAt[i]:], saved[l.uidAt[i]:l.uidAt[i]+4])
		copy(l.raw[l.gidAt[i]:], saved[l.gidAt[i]:l.gidAt[i]+4])
	}
	if !bytes.Equal(l.raw, saved) {
		t.Fatal("ownAs changed more than the uids and gids")
	}

	for n := range len(list) - 1 {
		l, err := readReceiverList(bytes.NewReader(list[:n]), io.Discard, o)
		if err == nil || !bytes.Equal(l.raw, list[:n]) {
			t.Fatalf("a list cut at %d bytes: %v, %d bytes kept", n, err, len(l.raw))
		}
	}

	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Dir(root)
	before, _ := os.Stat(outside)
	dirs = append(dirs, listedDir{name: "..", mode: 0o40777, mtime: time.Unix(5, 0)}, listedDir{name: "../x", mode: 0o40777})
	if err := touchUpDirs(root, dirs, o); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "sub"))
	if err != nil || fi.Mode() != os.ModeDir|os.ModeSetgid|0o750 || fi.ModTime().Unix() != 400 {
		t.Fatalf("sub: %v %v %v", fi.Mode(), fi.ModTime(), err)
	}
	if fi, _ := os.Stat(root); fi.ModTime().Unix() != 100 {
		t.Fatalf("root: %v", fi.ModTime())
	}
	if after, _ := os.Stat(outside); !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() {
		t.Fatal("touchUpDirs changed a directory outside its destination")
	}
}

// TestLocalName: rsync's choice of destination. One file to a new path
// becomes that path (its entry renamed, the rest of the stream as it
// was); to a directory, or a path ending in /, it goes inside; several to
// a new path make it a directory.
func TestLocalName(t *testing.T) {
	o := flistOpts{links: true}
	one := func(name string, mode uint32) *receiverList {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.LittleEndian, int32(32))
		flistEntry(&b, name, mode, 7, "", o)
		b.WriteByte(0)
		b.WriteString("after")
		l, err := readReceiverList(bytes.NewReader(b.Bytes()), io.Discard, o)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	root := t.TempDir()
	l := one("data.bin", 0o100644)
	raw, dest := l.localName(filepath.Join(root, "new"))
	if dest != root {
		t.Fatalf("dest %q, want %q", dest, root)
	}
	back, err := readReceiverList(bytes.NewReader(raw), io.Discard, o)
	if err != nil || back.entries != 1 || !bytes.HasSuffix(raw, []byte("after")) || !bytes.Contains(raw, []byte("new")) || bytes.Contains(raw, []byte("data.bin")) {
		t.Fatalf("renamed list: %v, %q", err, raw)
	}
	if _, dest := l.localName(root); dest != root {
		t.Fatalf("into a directory: dest %q", dest)
	}
	if _, dest := l.localName(filepath.Join(root, "d") + "/"); dest != filepath.Join(root, "d")+"/" {
		t.Fatalf("to a path ending in /: dest %q", dest)
	}
	if _, dest := one("tree", 0o40755).localName(filepath.Join(root, "made")); dest != filepath.Join(root, "made") {
		t.Fatalf("a directory: dest %q", dest)
	}
	if fi, err := os.Stat(filepath.Join(root, "made")); err != nil || !fi.IsDir() {
		t.Fatalf("the new destination directory: %v", err)
	}
}

// TestDropGreeting: the server's greeting is dropped across writes, and
// one that differs is refused.
func TestDropGreeting(t *testing.T) {
	var out bytes.Buffer
	d := &dropGreeting{w: &out, want: rsyncGreeting}
	for _, p := range [][]byte{rsyncGreeting[:3], append(append([]byte{}, rsyncGreeting[3:]...), 'x'), []byte("yz")} {
		if n, err := d.Write(p); err != nil || n != len(p) {
			t.Fatalf("write %x: %d, %v", p, n, err)
		}
	}
	if out.String() != "xyz" {
		t.Fatalf("passed %q", out.String())
	}
	if _, err := (&dropGreeting{w: &out, want: rsyncGreeting}).Write([]byte{28}); err == nil {
		t.Fatal("another greeting passed")
	}
}

// FuzzReadReceiverList: any bytes read as a list or an error, never a
// panic, and every byte read is kept.
func FuzzReadReceiverList(f *testing.F) {
	f.Add([]byte{27, 0, 0, 0, 0x40, 1, 0, 0, 0, '.', 0, 0, 0, 0, 1, 0, 0, 0, 0xed, 0x41, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		o := flistOpts{uid: true, gid: true, links: true, devices: true, delete: len(data)%2 == 0}
		l, err := readReceiverList(bytes.NewReader(data), io.Discard, o)
		if err == nil && l.entries == 1 {
			_ = l.renameFirst("x")
		}
		if !bytes.Equal(l.raw, data[:len(l.raw)]) {
			t.Fatal("raw is not the stream's prefix")
		}
	})
}
