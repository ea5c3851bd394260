package sessions

import (
	"github.com/termgate/termgate/internal/ring"
	"github.com/termgate/termgate/screen/sanitize"
)

// Replayer decides what a client that cannot resume from an offset is sent
// when it attaches. The raw strategy below replays the ring; a terminal-state
// snapshot (a headless emulator, package screen) is swapped in through
// Config.NewReplayer without touching the session.
//
// The session calls Write, Resize, Attached and Replay with its lock held,
// in the order the events happen, so they must not block on I/O; Close is
// called once, without the lock, after the shell's processes are killed.
type Replayer interface {
	// Write observes output, in order, after it was added to the ring.
	Write(p []byte)
	// Resize observes window size changes.
	Resize(size Size)
	// Attached observes the number of attached clients after it changed:
	// terminal queries in the output are the attached clients' to answer,
	// and the replayer's while there are none.
	Attached(n int)
	// Replay returns the bytes a newly attached client is sent first.
	Replay() []byte
	// Close stops what the replayer runs and waits for it.
	Close()
}

// NewReplayerFunc makes a session's replayer: ring is the session's raw
// output (read it only in Replay, under the session's lock) and answer
// sends a reply to a terminal query to the shell's input, in line with the
// clients' input (call it without holding a lock the session may wait for).
type NewReplayerFunc func(ring *ring.Buffer, answer func([]byte)) Replayer

// NewRawReplayer replays the ring's content, cleaned by sanitize.Replay.
func NewRawReplayer(ring *ring.Buffer) Replayer { return rawReplayer{ring} }

func rawReplayerFunc(ring *ring.Buffer, _ func([]byte)) Replayer { return NewRawReplayer(ring) }

type rawReplayer struct{ ring *ring.Buffer }

func (rawReplayer) Write([]byte) {}
func (rawReplayer) Resize(Size)  {}
func (rawReplayer) Attached(int) {}
func (rawReplayer) Close()       {}

func (r rawReplayer) Replay() []byte {
	return sanitize.Replay(r.ring.Bytes(), r.ring.Start() > 0)
}
