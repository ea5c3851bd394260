package holder

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// shell is one shell on its pseudo-terminal. The holder is the shell's
// parent, so the exit status comes from wait, and the shell leads its own
// session: everything it starts shares that session ID unless it calls
// setsid, and then it still carries the TERMGATE_SESSION marker unless it
// clears its environment too; the daemon, a child subreaper (reap.go),
// still has it below itself then.
type shell struct {
	cmd    *exec.Cmd
	pty    *os.File
	marker string
	// nonblock: pty is on the runtime's poller (pollable), and more may
	// read it without waiting.
	nonblock bool

	waitOnce sync.Once
	code     int
	killOnce sync.Once
}

func startShell(cmd *exec.Cmd, cols, rows int) (*shell, error) {
	shellStarting()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		shellStarted(0)
		return nil, fmt.Errorf("holder: start %s: %w", cmd.Path, err)
	}
	shellStarted(cmd.Process.Pid)
	nonblock := false
	if pf, err := pollable(f); err == nil {
		f, nonblock = pf, true
	} // else f still works, with blocking reads and writes
	marker := ""
	for _, e := range cmd.Env {
		if v, ok := strings.CutPrefix(e, "TERMGATE_SESSION="); ok {
			marker = v
		}
	}
	return &shell{cmd: cmd, pty: f, nonblock: nonblock, marker: marker}, nil
}

func (s *shell) resize(cols, rows int) error {
	return setSize(s.pty, cols, rows)
}

// wait returns the shell's exit status (128+signal when killed).
func (s *shell) wait() int {
	s.waitOnce.Do(func() {
		_ = s.cmd.Wait()
		shellWaited(s.cmd.Process.Pid)
		s.code = s.cmd.ProcessState.ExitCode()
		if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s.code = 128 + int(ws.Signal())
		}
	})
	return s.code
}

// kill SIGKILLs every process of the shell's session, every process
// carrying its marker and, in the daemon (a subreaper: Subreap), every
// descendant of the holder, in rounds until a round finds none (signals
// are delivered asynchronously, and a dying job may still fork), then
// reaps the orphans among them and closes the terminal. A shell is killed
// only before the next one starts (reset) or as the daemon ends, so every
// descendant of the daemon is this shell's.
func (s *shell) kill() {
	s.killOnce.Do(func() {
		s.killJobs()
		reapOrphans()
		_ = s.pty.Close()
	})
}

// killJobs is kill but for the terminal, which it leaves open: a shell
// that exited may have left output in it for the pump.
func (s *shell) killJobs() {
	sid := s.cmd.Process.Pid
	below := reaper.on.Load()
	for round := 0; round < 200; round++ {
		if killMarked(sid, s.marker, below) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killMarked signals the processes of session sid, with the marker in
// their environment or (below) descendants of this process, never this
// process, and returns how many it found.
func killMarked(sid int, marker string, below bool) int {
	// The whole table first: a parent killed before its children are
	// found would hand them to this process as zombies, or to PID 1.
	self := os.Getpid()
	live, err := liveProcs(self)
	if err != nil {
		_ = syscall.Kill(-sid, syscall.SIGKILL)
		return 0
	}
	want := []byte("TERMGATE_SESSION=" + marker + "\x00")
	n := 0
	for pid, st := range live {
		hit := st.sid == sid || below && descends(live, pid, self)
		if !hit && marker != "" {
			env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
			hit = err == nil && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...))
		}
		if hit && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// descends reports whether pid is below ancestor in the table (bounded by
// its size: a PPid loop cannot occur, but a table read over time may hold
// a reused PID).
func descends(live map[int]procStat, pid, ancestor int) bool {
	for range len(live) {
		st, ok := live[pid]
		switch {
		case !ok:
			return false
		case st.ppid == ancestor:
			return true
		}
		pid = st.ppid
	}
	return false
}

// liveProcs is the process table without self, PID 1 and zombies.
func liveProcs(self int) (map[int]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	live := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		if st, ok := statOf(pid); ok && st.state != "Z" {
			live[pid] = st
		}
	}
	return live, nil
}

type procStat struct {
	state string
	ppid  int
	sid   int
	start uint64 // clock ticks after boot (field 22)
}

// statOf parses /proc/PID/stat.
func statOf(pid int) (procStat, bool) {
	return readStat("/proc/" + strconv.Itoa(pid) + "/stat")
}

// readStat parses a /proc/PID/stat file after the last ')' of the whole
// file (the command name may contain ')', spaces and newlines), reading at
// most 4 KiB of it.
func readStat(path string) (procStat, bool) {
	f, err := os.Open(path)
	if err != nil {
		return procStat{}, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// After the name: state (3), ppid (4), pgrp (5), sid (6) ... starttime (22).
	fl := strings.Fields(string(b[i+1:]))
	if len(fl) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(fl[1])
	sid, err2 := strconv.Atoi(fl[3])
	start, err3 := strconv.ParseUint(fl[19], 10, 64)
	return procStat{state: fl[0], ppid: ppid, sid: sid, start: start}, err1 == nil && err2 == nil && err3 == nil
}

// sessionMarker is the TERMGATE_SESSION value in an environ file, reading
// at most limit bytes of it (limit < 0: all of it), and how much it read.
func sessionMarker(environ string, limit int64) (marker string, read int) {
	f, err := os.Open(environ)
	if err != nil {
		return "", 0
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	b, _ := io.ReadAll(r)
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("TERMGATE_SESSION=")); ok {
			return string(v), len(b)
		}
	}
	return "", len(b)
}
