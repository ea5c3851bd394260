package main

import (
	"bytes"
	"encoding/binary"
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

// TestReadFlistDirs: the directories of a file list, through the tap
// that passes every byte on; a truncated or hostile list is an error.
func TestReadFlistDirs(t *testing.T) {
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

	tap := newDirTap(bytes.NewReader(stream), o)
	var passed bytes.Buffer
	if _, err := passed.ReadFrom(tap); err != nil {
		t.Fatal(err)
	}
	dirs, err := tap.result()
	if err != nil || !bytes.Equal(passed.Bytes(), stream) {
		t.Fatalf("dirs %v, err %v; passed on %d of %d bytes", dirs, err, passed.Len(), len(stream))
	}
	if len(dirs) != 2 || dirs[0].name != "." || dirs[1].name != "sub" || dirs[1].mode != 0o42750 || dirs[1].mtime.Unix() != 400 {
		t.Fatalf("dirs %+v", dirs)
	}

	for n := range len(list) - 1 {
		tap := newDirTap(bytes.NewReader(list[:n]), o)
		_, _ = new(bytes.Buffer).ReadFrom(tap)
		if _, err := tap.result(); err == nil {
			t.Fatalf("a list cut at %d bytes read without error", n)
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

// FuzzReadFlistDirs: any bytes read as a list or an error, never a panic.
func FuzzReadFlistDirs(f *testing.F) {
	f.Add([]byte{27, 0, 0, 0, 0x40, 1, 0, 0, 0, '.', 0, 0, 0, 0, 1, 0, 0, 0, 0xed, 0x41, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		tap := newDirTap(bytes.NewReader(data), flistOpts{uid: true, gid: true, links: true, devices: true, delete: len(data)%2 == 0})
		_, _ = new(bytes.Buffer).ReadFrom(tap)
		_, _ = tap.result()
	})
}
