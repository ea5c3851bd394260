package holder

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// jobGrace is how long the terminal may stay open after the shell exited
// and its jobs were killed: its other end is then held only by a process
// the kill cannot find (one outside the session that opened the terminal
// by its name), and the session does not wait for it.
var jobGrace = 2 * time.Second // a variable for tests

// hangupPoll is how often awaitExit looks whether the terminal's other end
// is closed (no event says so but the pump's end, which a gateway that is
// behind may hold back).
const hangupPoll = 20 * time.Millisecond

// awaitExit ends the session when its shell exits. It waits for the shell
// itself, not for the end of the terminal: a background job (or a daemon
// the shell started) that keeps the terminal open would otherwise keep the
// session, its shell a zombie, with nobody reading the clients' keys
// (contract, session semantics 7). So once the shell exited, everything
// it started is killed, the pump delivers what the shell wrote before it
// went (the terminal ends once its last holder is gone), and only then
// do the gateways get the exit status, after the last output byte.
func (h *holder) awaitExit(sh *shell, id string, pumped <-chan struct{}) {
	code := sh.wait()
	h.mu.Lock()
	current := h.shell == sh
	h.mu.Unlock()
	if !current {
		return // a reset replaced it, and ends what it started
	}
	sh.killJobs()
	tick := time.NewTicker(hangupPoll)
	defer tick.Stop()
	deadline := time.Now().Add(jobGrace)
	for closed := false; ; {
		select {
		case <-pumped:
			h.finishShell(sh, ExitMsg{Session: id, Code: code})
			return
		case <-tick.C:
		}
		switch {
		case closed:
			if time.Now().After(deadline) { // a blocking terminal: the read ends with the kill's close
				h.finishShell(sh, ExitMsg{Session: id, Code: code})
				return
			}
		case hungUp(sh.pty):
			// Nothing holds the other end: the pump reads what is left
			// and ends, as fast as the gateways take it.
			deadline = time.Now().Add(jobGrace)
		case time.Now().After(deadline):
			h.log.Warn("the terminal stays open after the shell exited and its jobs were killed; closing it",
				"session", id, "waited", jobGrace.String())
			_ = sh.pty.Close() // interrupts the pump's read (pollable)
			closed, deadline = true, time.Now().Add(jobGrace)
		}
	}
}

// hungUp reports whether nothing holds the terminal's other end any more
// (the master reports POLLHUP), whatever output still waits in it.
func hungUp(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true // closed
	}
	hup := false
	_ = rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(p, 0); err == nil && n > 0 {
			hup = p[0].Revents&(unix.POLLHUP|unix.POLLNVAL) != 0
		}
	})
	return hup
}
