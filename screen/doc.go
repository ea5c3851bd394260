// Package screen keeps a session's terminal state in a small headless
// terminal emulator and redraws it for a client that attaches
// (--replay screen, the default): scrollback, the visible screen with
// colours and attributes, the alternate screen with the main screen behind
// it, the cursor, the scroll region, the title and the modes that change
// what the keyboard and mouse send. What is restored and what is not is in
// docs/SESSIONS.md; the promise that a snapshot asks the client's terminal
// nothing, with its tests, in SECURITY.md ("Instances are untrusted").
//
// Terminal is the emulator (not safe for concurrent use). A snapshot is
// written from its cells and state, never copied from the output, so it
// holds no query and no control the output carried. It is bounded
// (SnapshotBound: the scrollback plus MaxScreenBytes per screen drawn): a
// screen too large to draw in full is drawn without combining marks, then
// without colours, then with its top rows blank, so that a snapshot always
// fits a client's queue.
//
// Replayer wraps a Terminal as a sessions.Replayer. Goroutines: one worker
// per Replayer (NewReplayerFunc makes them), stopped and waited for by Close, which feeds the
// session's output to the emulator from a bounded queue (sizes with no
// output between them coalesced into the latest), so the relay to
// attached clients never waits for it. While a client is attached the
// worker is woken lazily (a timer or a full batch) and the emulator answers
// nothing; while none is, every chunk wakes it and it answers cursor
// position and device attributes queries into the shell's input. A
// snapshot first feeds what still waits, or rebuilds from the session's raw
// ring when the queue overflowed; an emulator panic falls back to the raw
// replay.
//
// Lock order: the session's lock, then Replayer.emuMu (the emulator), then
// Replayer.mu (the queue). The session calls Write, Resize, Attached and
// Replay with its lock held; the worker holds emuMu while feeding and never
// takes the session's lock.
package screen
