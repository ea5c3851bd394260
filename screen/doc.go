// Package screen keeps a session's terminal state in a small headless
// terminal emulator and redraws it for a client that attaches: scrollback,
// the visible screen with colours and attributes, the alternate screen with
// the main screen behind it, the cursor, the scroll region, the title and
// the modes that change what the keyboard and mouse send.
//
// Terminal is the emulator (not safe for concurrent use). Replayer wraps it
// as a sessions.Replayer: the session's output reaches it through a bounded
// queue drained by the replayer's own goroutine, so the relay to attached
// clients never waits for the emulator; a snapshot first catches up with
// the queue, or rebuilds from the session's raw ring when the queue
// overflowed.
package screen
