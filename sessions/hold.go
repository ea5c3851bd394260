package sessions

import (
	"context"
	"errors"
)

// The session side of durable sessions (held.go has the interfaces): a
// held session mirrors its holder's state when it is adopted, leaves the
// idle timer to the holder, and, when it ends, leaves the shell to the
// holder unless the session itself is over.

// ErrHolderLost is the cause a held session's clients get when the
// gateway's connection to the holder broke: the shell may well run on, and
// a reattach adopts it again.
var ErrHolderLost = errors.New("lost the connection to the session's holder; the shell keeps running: reconnect to return to it")

// hold makes s the gateway's mirror of a held shell: the holder's ID is
// already s's; its creation time, window size, byte numbering and replay
// become s's. Called before start.
func (s *Session) hold(hp HeldProcess) {
	st := hp.Held()
	s.held = hp
	// Nothing else runs yet, but the replayer is called under the lock,
	// as it is promised.
	s.mu.Lock()
	defer s.mu.Unlock()
	if !st.Created.IsZero() {
		s.created = st.Created
	}
	if st.Size.Valid() && st.Size != s.size {
		s.size = st.Size
		s.resizeEmulatorLocked(st.Size)
	}
	s.ring.SetBase(st.Offset)
	if len(st.Replay) > 0 {
		// This output was live before: its terminal queries were answered
		// then, so the replayer must not answer them again into the shell
		// (it answers only while no client is attached).
		s.replay.Attached(1)
		s.ring.Write(st.Replay)
		s.replay.Write(st.Replay)
		s.replay.Attached(0)
	}
	s.bytesOut.Store(s.ring.End())
	s.publishLocked() // durable now, and maybe older
	hp.Clients(0)
}

// endedBy returns the registry cause a backend's Read ended with (see
// Process), or nil.
func endedBy(readErr error) error {
	var reset *ResetError
	var exit *ExitError
	switch {
	case errors.As(readErr, &reset):
		return reset
	case errors.As(readErr, &exit):
		return exit
	case errors.Is(readErr, ErrIdle):
		return ErrIdle
	case errors.Is(readErr, ErrInstanceGone):
		return ErrInstanceGone
	case errors.Is(readErr, ErrHolderLost):
		return ErrHolderLost
	case errors.Is(readErr, ErrHolderDied):
		return ErrHolderDied
	case errors.Is(readErr, ErrBackendLost):
		return ErrBackendLost
	}
	return nil
}

// finish ends the shell's side of a session that ended with cause
// (streamEnded: the output stream ended first, and cause says why). An
// in-gateway shell is killed. A held shell is killed only when the session
// is over for its holder too (the shell exited: its jobs go with it; the
// instance stopped); a reset asks the holder for a fresh shell; otherwise
// (the gateway restarts, the holder reset or reaped the session on its
// own, the connection to it broke: ErrHolderLost) the connection is
// released and the shell left to its holder.
func (s *Session) finish(cause error, streamEnded bool) {
	if s.held == nil {
		s.kill()
		return
	}
	var reset *ResetError
	var exit *ExitError
	switch {
	case errors.As(cause, &exit) || errors.Is(cause, ErrInstanceGone):
		s.kill()
		return
	case streamEnded || errors.Is(cause, ErrRestart):
	case errors.As(cause, &reset):
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.KillTimeout)
		err := s.held.Reset(ctx, reset.NewSession)
		cancel()
		if err != nil {
			// The user asked for the shell to go: end it the hard way.
			s.log.Warn("holder did not reset the session; killing it", "err", err)
			s.kill()
			return
		}
	default: // a Close the holder cannot do for us (ErrShutdown, say)
		s.kill()
		return
	}
	if err := s.held.Release(); err != nil {
		s.log.Warn("release the holder's connection", "err", err)
	}
}

// endedMsg is the log line for a session's end in this gateway: a durable
// session left to its holder has not ended.
func endedMsg(cause error) string {
	if errors.Is(cause, ErrRestart) || errors.Is(cause, ErrHolderLost) {
		return "session left running in its holder"
	}
	return "session ended"
}

// Durable reports whether the client's session is held outside the gateway
// (it survives a gateway restart: a listener closing for one tells the
// client to reconnect).
func (c *Client) Durable() bool {
	s, _ := c.session()
	return s.held != nil
}
