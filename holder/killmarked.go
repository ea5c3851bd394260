package holder

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillMarkers is procmark.KillScript for an instance without /bin/sh (a
// FROM scratch image), where the script cannot run but this binary can
// (termgate-holder kill): it SIGKILLs every process, never itself or PID
// 1, whose environment carries TERMGATE_SESSION set to one of markers, or
// to any value starting with one of prefixes, or to anything when all is
// set, and every descendant of one (a job that dropped its marker), in
// rounds until a round finds none. It writes one line per process ended
// to w, in the script's format ("killed PID MARKER COMM"), so the gateway
// reads both the same way. Such an instance runs no held session (a
// holder needs a shell to run it), so the script's rules about holders
// have nothing to apply to.
func KillMarkers(w io.Writer, markers, prefixes []string, all bool) {
	match := func(m string) bool {
		if all {
			return true
		}
		for _, x := range markers {
			if m == x {
				return true
			}
		}
		for _, p := range prefixes {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
		return false
	}
	seen := map[int]bool{}
	for round := 0; round < 200; round++ {
		if killRound(w, match, seen) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killRound reads the whole process table, then signals the matches and
// their descendants (the table first: a parent killed before its children
// are found hands them to PID 1).
func killRound(w io.Writer, match func(string) bool, seen map[int]bool) int {
	self := os.Getpid()
	live, err := liveProcs(self)
	if err != nil {
		return 0
	}
	marked := map[int]string{}
	for pid := range live {
		if m, ok := markerOf(pid); ok && match(m) {
			marked[pid] = m
		}
	}
	n := 0
	for pid := range live {
		m, hit := marked[pid]
		if !hit {
			for a := range marked {
				if descends(live, pid, a) {
					hit, m = true, "-"
					break
				}
			}
		}
		if !hit {
			continue
		}
		comm := ""
		if !seen[pid] {
			comm = commOf(pid) // before the kill: a dead process has none
		}
		if syscall.Kill(pid, syscall.SIGKILL) != nil {
			continue
		}
		n++
		if !seen[pid] {
			seen[pid] = true
			fmt.Fprintf(w, "killed %d %s %s\n", pid, m, comm)
		}
	}
	return n
}

// markerOf is the TERMGATE_SESSION value in pid's environment, all of
// it read, as killMarked does: a process that pads its environment must
// not push its marker out of reach of the kill.
func markerOf(pid int) (string, bool) {
	m, _ := sessionMarker("/proc/"+strconv.Itoa(pid)+"/environ", -1)
	return m, m != ""
}

// commOf is pid's command name, on one line and without spaces (it ends
// the output line).
func commOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	c := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(string(b)))
	if len(c) > 64 {
		c = c[:64]
	}
	return c
}
