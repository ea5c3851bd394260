package sessions

import "time"

// Observer watches one session's output and window size: the gateway's
// recordings are observers. Its methods are called without any session
// lock held, Output from the pump and Resize from the resizer, and must
// not block: an observer that cannot keep up drops what it must, it never
// slows the shell. Close is called once, after the last Output.
type Observer interface {
	// Output gets every chunk of the shell's output, in order. The chunk
	// is never modified afterwards, so the observer may keep it.
	Output(chunk []byte)
	// Resize gets every window size the session applies to the shell,
	// just before the backend applies it.
	Resize(size Size)
	// Close says the session has ended.
	Close()
}

// Recorded is an optional Observer capability: the name of the recording
// the observer writes, shown as the session's Info.Recording.
type Recorded interface {
	Recording() string
}

// InputObserver is an optional Observer capability: Input gets what a
// client wrote to the shell, called from the session's input goroutine
// after each successful write with the bytes the shell took (never a
// read-only client's refused input, nor the gateway's own answers to
// terminal queries). It must not block, and p is valid only during the
// call: an observer that keeps it copies it.
type InputObserver interface {
	Input(p []byte)
}

// RenameObserver is an optional Observer capability: Rename gets the
// instance's new name when the instance is renamed and the session follows
// it (a recording moves to the new name's directory). It is called without
// a session lock held and must not block.
type RenameObserver interface {
	Rename(instance string)
}

// ObservedSession describes a session to Config.Observe as it starts.
type ObservedSession struct {
	Instance, Session string
	// Name is the session's name in its instance ("" the default one).
	Name    string
	Created time.Time
	// Size is the window size the shell was started with.
	Size Size
	// Term is the shell's TERM.
	Term string
	// Held: a holder holds the shell (a durable session, see HeldProcess),
	// so the session may have run before this gateway observed it (it was
	// adopted after a restart, or from another gateway): its ID, byte
	// numbering and output go on from then.
	Held bool
	// Offset is the byte number of Replay's first byte; Output's first
	// chunk follows Replay. 0 for a session that is not held.
	Offset int64
	// Replay is the output the holder still buffered when the gateway
	// connected (never modified; Output does not repeat it).
	Replay []byte
}

// observe asks Config.Observe for the session's observer; it runs once,
// before the pump and resizer start, so they read s.obs without a lock.
func (s *Session) observe() {
	if s.cfg.Observe == nil {
		return
	}
	o := ObservedSession{Instance: s.inst.Name, Session: s.id, Name: s.name, Created: s.created, Size: s.size, Term: s.term}
	if s.held != nil {
		st := s.held.Held()
		o.Held, o.Offset, o.Replay = true, st.Offset, st.Replay
	}
	s.obs = s.cfg.Observe(o)
	if r, ok := s.obs.(Recorded); ok {
		s.recording = r.Recording()
	}
}

func (s *Session) observeOutput(chunk []byte) {
	if s.obs != nil {
		s.obs.Output(chunk)
	}
}

func (s *Session) observeInput(p []byte) {
	if o, ok := s.obs.(InputObserver); ok {
		o.Input(p)
	}
}

func (s *Session) observeResize(size Size) {
	if s.obs != nil {
		s.obs.Resize(size)
	}
}

func (s *Session) observeClose() {
	if s.obs != nil {
		s.obs.Close()
	}
}

// observeRename tells the observer the instance's new name, and takes the
// recording's name under it.
func (s *Session) observeRename(name string) {
	o, ok := s.obs.(RenameObserver)
	if !ok {
		return
	}
	o.Rename(name)
	if r, ok := s.obs.(Recorded); ok {
		rec := r.Recording()
		s.mu.Lock()
		s.recording = rec
		s.publishLocked()
		s.mu.Unlock()
	}
}
