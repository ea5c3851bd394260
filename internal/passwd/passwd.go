// Package passwd finds a login in an instance's /etc/passwd and
// /etc/group, for the in-instance helper that runs shells, commands and
// file transfers as that user (CONTRACT.md "Named sessions and logins").
// The files are the instance's, so untrusted: each is read up to a bound,
// lines past a length are skipped, and a malformed line is never an error
// for the lines around it, only never a match.
package passwd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/termgate/termgate/internal/names"
)

// Bounds on what is read of each file: a hostile instance may make them
// huge, or one endless line.
const (
	maxFile   = 4 << 20
	maxLine   = 4096
	maxGroups = 64
)

// User is a login as the instance defines it.
type User struct {
	// Name is the passwd name ("" for a numeric uid it does not list).
	Name     string
	UID, GID uint32
	// Groups are the supplementary groups /etc/group gives the name
	// (without GID), at most maxGroups.
	Groups []uint32
	// Home is the home directory ("/" when the entry has none, or none
	// that is an absolute path).
	Home string
	// Shell is the login shell when it is an absolute path, else "".
	Shell string
}

// ErrNoSuchUser: the login is not in the instance's /etc/passwd (and is
// not a numeric uid).
var ErrNoSuchUser = errors.New("no such user")

// Lookup finds login, a name or a numeric uid (names.ValidLogin), in
// passwd and, for its supplementary groups, group (nil: none). A numeric
// uid /etc/passwd does not list is still a user: its group is the uid's
// number, its home "/", no supplementary groups.
func Lookup(login string, passwdFile, groupFile io.Reader) (User, error) {
	if !names.ValidLogin(login) {
		return User{}, fmt.Errorf("login %q: not a user name or uid", clip(login))
	}
	uid, numeric := names.LoginUID(login)
	var found *User
	err := eachLine(passwdFile, func(f []string) bool {
		if len(f) != 7 {
			return true
		}
		u, ok := parseEntry(f)
		if !ok || (numeric && u.UID != uid) || (!numeric && u.Name != login) {
			return true
		}
		found = &u
		return false
	})
	if err != nil {
		return User{}, fmt.Errorf("read /etc/passwd: %w", err)
	}
	if found == nil {
		if !numeric {
			return User{}, fmt.Errorf("%w %q in the instance's /etc/passwd", ErrNoSuchUser, login)
		}
		return User{UID: uid, GID: uid, Home: "/"}, nil
	}
	if groupFile != nil && found.Name != "" {
		found.Groups, err = groupsOf(found.Name, found.GID, groupFile)
		if err != nil {
			return User{}, fmt.Errorf("read /etc/group: %w", err)
		}
	}
	return *found, nil
}

// parseEntry reads name:password:uid:gid:gecos:home:shell.
func parseEntry(f []string) (User, bool) {
	if !names.ValidLogin(f[0]) {
		return User{}, false
	}
	uid, ok1 := number(f[2])
	gid, ok2 := number(f[3])
	if !ok1 || !ok2 {
		return User{}, false
	}
	u := User{Name: f[0], UID: uid, GID: gid, Home: "/"}
	if h := f[5]; path.IsAbs(h) && path.Clean(h) == h {
		u.Home = h
	}
	if s := f[6]; path.IsAbs(s) && path.Clean(s) == s {
		u.Shell = s
	}
	return u, true
}

// groupsOf is the gids of the groups that list name as a member
// (name:password:gid:member,member), other than gid.
func groupsOf(name string, gid uint32, r io.Reader) ([]uint32, error) {
	var out []uint32
	err := eachLine(r, func(f []string) bool {
		if len(f) != 4 {
			return true
		}
		g, ok := number(f[2])
		if !ok || g == gid {
			return true
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == name {
				out = append(out, g)
				break
			}
		}
		return len(out) < maxGroups
	})
	return out, err
}

// eachLine calls f with each line's ':'-separated fields, skipping blank
// lines, comments, NIS lines ('+' or '-') and lines longer than maxLine,
// until f returns false or maxFile bytes were read.
func eachLine(r io.Reader, f func([]string) bool) error {
	br := bufio.NewReaderSize(io.LimitReader(r, maxFile), maxLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if isPrefix { // too long: skip the rest of it
			for isPrefix && err == nil {
				_, isPrefix, err = br.ReadLine()
			}
			continue
		}
		s := string(line)
		if s == "" || s[0] == '#' || s[0] == '+' || s[0] == '-' {
			continue
		}
		if !f(strings.Split(s, ":")) {
			return nil
		}
	}
}

// number reads a uid or gid: decimal, 32 bits, not -1's 4294967295.
func number(s string) (uint32, bool) {
	if s == "" || len(s) > 10 || s[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
