package sessions

// Replayer decides what a client that cannot resume from an offset is sent
// when it attaches. The raw strategy below replays the ring; a terminal-state
// snapshot (a headless emulator) can be swapped in through
// Config.NewReplayer without touching the session.
type Replayer interface {
	// Write observes output, in order, after it was added to the ring.
	Write(p []byte)
	// Resize observes window size changes.
	Resize(size Size)
	// Replay returns the bytes a newly attached client is sent first.
	Replay() []byte
}

// NewRawReplayer replays the ring's content, cleaned by SanitizeReplay.
func NewRawReplayer(ring *Ring) Replayer { return rawReplayer{ring} }

type rawReplayer struct{ ring *Ring }

func (rawReplayer) Write([]byte) {}
func (rawReplayer) Resize(Size)  {}

func (r rawReplayer) Replay() []byte {
	return SanitizeReplay(r.ring.Bytes(), r.ring.Start() > 0)
}
