// Package local is the termgate backend whose instances are PTY shells on
// the gateway's own host (github.com/creack/pty). It exists for development,
// demos and fast tests of everything above the backend: every valid name is
// an instance unless Config.Instances lists the allowed ones. --durable is
// refused with it: a local shell is the gateway's own child.
//
// Local shells are children of the gateway: when it dies, the kernel hangs
// up their terminals, so there is nothing for Sweep to find. Every
// descriptor the backend opens is close-on-exec (inherited_linux.go), so a
// shell holds only its own terminal, never another session's.
//
// Goroutines: per shell, one that waits for its exit (exit_linux.go: on a
// pidfd, parked on the runtime's poller rather than holding an OS thread;
// the blocking wait where pidfds do not work) and ends with it. One killer
// goroutine (killer.go) runs only while kills are pending: it walks /proc
// once per round for every session being killed at the time, SIGKILLs the
// processes whose session id (stat.go: field 6 of /proc/PID/stat, read
// after the last ")") is a pending one, and repeats until a round finds
// nothing of a session, so 1,000 sessions ended by SIGTERM share the walks.
//
// Locks: killer.mu guards the pending kills; it is never held during the
// walk or a signal.
package local
