package holder

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The holder daemon is a child subreaper (PR_SET_CHILD_SUBREAPER): a held
// shell's job that double-forks, calls setsid and clears its environment
// is handed to the holder when its parent dies, not to the instance's PID
// 1, so it is still below the holder, where the holder's kill finds it and
// where the gateway's kill script leaves it to the holder. The holder must
// then reap what it inherits, or each such job leaves a zombie behind.
//
// exec.Cmd.Wait reaps the shells: the reaper never waits for any process
// (no wait4(-1)), only for each zombie whose parent is the holder and that
// is no shell. A shell just forked is not yet in shells: while a start is
// under way (starting > 0) the reaper leaves every zombie for its next
// round, so it never takes a shell's exit from exec.Cmd.Wait.
var reaper struct {
	on       atomic.Bool // Subreap was called: one holder in this process
	starting atomic.Int32
	mu       sync.Mutex // guards shells
	shells   map[int]bool
}

// reapAgain is how soon the reaper looks again at a zombie it left while
// a shell started (no SIGCHLD may come for it).
const reapAgain = 100 * time.Millisecond

// Subreap makes this process a child subreaper and reaps the orphans it
// inherits until stop is called (stop waits for the reaper). Only for a
// process that runs one holder (cmd/termgate-holder's daemon): with it,
// a shell's kill also ends every descendant of this process.
func Subreap() (stop func(), err error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return func() {}, fmt.Errorf("holder: become a child subreaper: %w", err)
	}
	reaper.on.Store(true)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		again := time.NewTimer(reapAgain)
		again.Stop()
		defer again.Stop()
		for {
			select {
			case <-done:
				return
			case <-sigs:
			case <-again.C:
			}
			if _, left := reapOrphans(); left {
				again.Reset(reapAgain)
			}
		}
	})
	return func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}, nil
}

// shellStarting and shellStarted bracket a shell's start (pid 0: it
// failed); shellWaited drops it once exec.Cmd.Wait reaped it.
func shellStarting() { reaper.starting.Add(1) }

func shellStarted(pid int) {
	if pid > 0 {
		reaper.mu.Lock()
		if reaper.shells == nil {
			reaper.shells = map[int]bool{}
		}
		reaper.shells[pid] = true
		reaper.mu.Unlock()
	}
	reaper.starting.Add(-1)
}

func shellWaited(pid int) {
	reaper.mu.Lock()
	delete(reaper.shells, pid)
	reaper.mu.Unlock()
}

func isShell(pid int) bool {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	return reaper.shells[pid]
}

// reapOrphans waits for every zombie child of this process that is no
// shell, and returns how many it reaped and whether it left one because a
// shell was starting.
func reapOrphans() (n int, left bool) {
	if !reaper.on.Load() {
		return 0, false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := statOf(pid)
		if !ok || st.state != "Z" || st.ppid != self {
			continue
		}
		// Seen as a zombie before this check: a shell is either
		// registered by now or still starting.
		if isShell(pid) {
			continue
		}
		if reaper.starting.Load() > 0 {
			left = true
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			n++
		}
	}
	return n, left
}
