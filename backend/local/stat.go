package local

import (
	"bytes"
	"strconv"
)

// stat is what the killer needs from /proc/PID/stat.
type stat struct {
	state byte // R, S, D, Z, X, …
	sid   int  // session id (field 6)
}

// live reports whether the process can still run: a zombie has exited and
// only waits to be reaped.
func (s stat) live() bool { return s.state != 'Z' && s.state != 'X' && s.state != 'x' }

// parseStat parses the content of a /proc/PID/stat file. Field 2, the
// command name in parentheses, is chosen by the process itself and may hold
// spaces, parentheses and newlines ("x) S 0 0 20\n"), so the fields are
// counted after the last ')' of the whole file, never of its first line:
// a process must not pass itself off as a member of another session, or
// as a zombie.
func parseStat(b []byte) (stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	// state ppid pgrp session …
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return stat{}, false
	}
	sid, err := strconv.Atoi(string(f[3]))
	if err != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], sid: sid}, true
}
