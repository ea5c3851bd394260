// Package fileperm decides whether the files that grant access to the
// gateway (its state directory, authorized_keys, the token file, the trusted
// CA file, the audit log) can be changed by anyone but root and the user the
// gateway runs as. It follows OpenSSH's StrictModes: every directory on the
// way to the file and the file itself must be owned by root or that user and
// not be writable by others, so nobody else can rewrite the file or swap it,
// or a directory or symbolic link on its path, for one of their own.
//
// Two allowances keep ordinary set-ups working: a directory on the way
// (never the state directory itself) may be writable by others when it has
// the sticky bit (/tmp: others cannot rename or remove what is not theirs,
// and what the path goes through is checked to be root's or the gateway
// user's), and a directory on the way that is writable by its group is
// reported as a warning rather than refused (umask 002 with per-user
// groups makes home directories and checkouts group-writable; refusing
// would break `make demo` there).
package fileperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrInsecure is wrapped by every refusal: someone other than root and the
// gateway's user can change the path.
var ErrInsecure = errors.New("insecure ownership or permissions")

// maxLinks bounds the symbolic links followed on one path (Linux's limit).
const maxLinks = 40

// Checker judges paths for the user the gateway runs as.
type Checker struct {
	// UID is the gateway's effective user id: files owned by it or by root
	// are trusted.
	UID int
}

// Default is the Checker for this process.
func Default() Checker { return Checker{UID: os.Geteuid()} }

// Dir checks the state directory: every directory and symbolic link on the
// way to it (see the package comment), and the directory itself, which must
// be owned by root or the gateway's user and writable by nobody else.
// Warnings name group-writable directories on the way. A path that does not
// exist is an error wrapping fs.ErrNotExist.
func (c Checker) Dir(path string) (warnings []string, err error) {
	resolved, fi, warnings, err := c.walk(path)
	if err != nil {
		return warnings, err
	}
	if !fi.IsDir() {
		return warnings, fmt.Errorf("%s is not a directory", path)
	}
	if err := c.owned(resolved, fi); err != nil {
		return warnings, err
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		fix := "run: chmod go-w " + resolved
		if c.system(resolved, fi) {
			fix = pickPrivate
		}
		return warnings, fmt.Errorf("state directory %s%s is writable by group or others (mode %04o): %w: whoever can write it can replace the host key, authorized_keys and tokens; %s", path, via(path, resolved), perm, ErrInsecure, fix)
	}
	return warnings, nil
}

// pickPrivate is the advice for a shared or system directory: its mode is
// not the user's to change (making /tmp unwritable breaks the system).
const pickPrivate = "it is a shared or system directory: do not change its permissions, pick a private directory instead (a new one only you can write, e.g. made with mkdir -m 700, or leave --state-dir out for the default)"

// systemDirs are directories of the system's own layout.
var systemDirs = map[string]bool{
	"/": true, "/tmp": true, "/var": true, "/var/tmp": true, "/var/lib": true, "/run": true, "/dev": true,
	"/dev/shm": true, "/usr": true, "/etc": true, "/home": true, "/opt": true, "/srv": true, "/mnt": true,
	"/media": true, "/root": true,
}

// system reports whether dir is shared or the system's: part of the
// system's layout (/tmp, where others keep their files, among them), or
// root's while the gateway is not root (not the user's to change).
func (c Checker) system(dir string, fi fs.FileInfo) bool {
	if systemDirs[filepath.Clean(dir)] {
		return true
	}
	uid, ok := owner(fi)
	return ok && uid == 0 && c.UID != 0
}

// File checks a file that grants access: every directory and symbolic link
// on the way to it (see the package comment), and the file itself (see
// Info). A path that does not exist is an error wrapping fs.ErrNotExist,
// unless a directory on the way is refused first.
func (c Checker) File(path string) (warnings []string, err error) {
	resolved, fi, warnings, err := c.walk(path)
	if err != nil {
		return warnings, err
	}
	return warnings, c.Info(resolved, fi, 0o022)
}

// Info checks an opened file's FileInfo (from Stat on the open file, so it
// describes what is read): a regular file, owned by root or the gateway's
// user, with none of the deny permission bits (0o022: nobody else may
// write it; 0o026: nor may others read it).
func (c Checker) Info(path string, fi fs.FileInfo, deny fs.FileMode) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if err := c.owned(path, fi); err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	bad := perm & deny
	if bad == 0 {
		return nil
	}
	var what []string
	if bad&0o022 != 0 {
		what = append(what, "writable by group or others")
	}
	if bad&0o044 != 0 {
		what = append(what, "readable by others")
	}
	if bad&0o004 != 0 && bad&0o040 != 0 {
		what[len(what)-1] = "readable by group or others"
	}
	fix := "go-w"
	if deny&0o044 != 0 {
		fix = "600"
	}
	return fmt.Errorf("%s is %s (mode %04o): %w; run: chmod %s %s", path, strings.Join(what, " and "), perm, ErrInsecure, fix, path)
}

// owned refuses what is owned by neither root nor the gateway's user: its
// owner could change it whatever its mode.
func (c Checker) owned(path string, fi fs.FileInfo) error {
	uid, ok := owner(fi)
	if !ok || uid == 0 || uid == c.UID {
		return nil
	}
	return fmt.Errorf("%s is owned by uid %d, neither root nor the gateway's user (uid %d): %w: that user can change it; run: chown %d %s (or use a path of your own)", path, uid, c.UID, ErrInsecure, c.UID, path)
}

// walk resolves path one component at a time, as the kernel does, checking
// each directory it looks into and each entry it passes (symbolic links
// included). It returns the resolved path and the final entry's FileInfo
// (never a symbolic link).
func (c Checker) walk(path string) (resolved string, fi fs.FileInfo, warnings []string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, nil, err
	}
	cur := string(filepath.Separator)
	fi, err = os.Lstat(cur)
	if err != nil {
		return "", nil, nil, err
	}
	rest := split(abs)
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		if name == ".." {
			// cur has no symbolic links in it: its parent is the
			// directory it was entered from, already checked.
			cur = filepath.Dir(cur)
			if fi, err = os.Lstat(cur); err != nil {
				return "", nil, warnings, err
			}
			continue
		}
		// cur is about to be looked into: whoever may change its entries
		// may swap what comes next.
		if w, err := c.parent(cur, fi, path); err != nil {
			return "", nil, warnings, err
		} else if w != "" {
			warnings = append(warnings, w)
		}
		next := filepath.Join(cur, name)
		if fi, err = os.Lstat(next); err != nil {
			return "", nil, warnings, err
		}
		if err := c.owned(next, fi); err != nil {
			return "", nil, warnings, fmt.Errorf("on the path to %s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", nil, warnings, fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", nil, warnings, err
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
			if fi, err = os.Lstat(cur); err != nil {
				return "", nil, warnings, err
			}
		} else if fi, err = os.Lstat(cur); err != nil {
			return "", nil, warnings, err
		}
		rest = append(split(target), rest...)
	}
	return cur, fi, warnings, nil
}

// parent checks a directory that holds an entry on the path: owned by root
// or the gateway's user, not writable by others unless sticky; writable by
// its group is a warning.
func (c Checker) parent(dir string, fi fs.FileInfo, path string) (warning string, err error) {
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	if err := c.owned(dir, fi); err != nil {
		return "", fmt.Errorf("on the path to %s: %w", path, err)
	}
	perm := fi.Mode().Perm()
	if fi.Mode()&fs.ModeSticky != 0 {
		return "", nil
	}
	if perm&0o002 != 0 {
		fix := fmt.Sprintf("run: chmod o-w %s (or chmod +t %s), or keep the file elsewhere", dir, dir)
		if c.system(dir, fi) {
			fix = "it is a system directory: do not change its permissions, keep the file elsewhere"
		}
		return "", fmt.Errorf("%s is on the path to %s and writable by others (mode %04o): %w: anyone can replace what it holds; %s", dir, path, perm, ErrInsecure, fix)
	}
	if perm&0o020 != 0 {
		gid, _ := group(fi)
		return fmt.Sprintf("%s is on the path to %s and writable by its group (gid %d, mode %04o): members of that group can replace what it holds; run: chmod g-w %s unless that group is yours alone", dir, path, gid, perm, dir), nil
	}
	return "", nil
}

// split returns the non-empty, non-"." components of a path.
func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, string(filepath.Separator)) {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// via says where a path led, when it was relative or went through symbolic
// links.
func via(path, resolved string) string {
	if path == resolved {
		return ""
	}
	return " (" + resolved + ")"
}
