package sessions

import (
	"context"
	"time"
)

// startResizerLocked starts the resizer when a new size waits for the
// backend or the screen emulator and none runs. Called with mu held.
func (s *Session) startResizerLocked() {
	if s.rz.resizing {
		return
	}
	if s.state != stateRunning || (s.size == s.rz.applied && s.size == s.rz.emuSize) {
		s.resizedLocked(s.rz.resizeSeq) // nothing for input to wait for
		return
	}
	s.rz.resizing = true
	s.rz.resizerWG.Add(1)
	go s.resizer()
}

// resizeEmulatorLocked gives the replayer (the screen emulator) a size.
// Called with mu held: the replayer orders it with the output.
func (s *Session) resizeEmulatorLocked(size Size) {
	if size == s.rz.emuSize {
		return
	}
	s.rz.emuSize = size
	s.replay.Resize(size)
}

// resizer applies the latest requested size outside any lock, so a slow
// backend resize never stalls output or other clients. It returns once the
// applied size is the latest (or the session is closing); sizes requested
// meanwhile are coalesced into the latest, and it applies no more than
// resizePace allows (see resizepace.go). The emulator gets each size just
// before the backend, as the shell's redraw for it follows.
func (s *Session) resizer() {
	defer s.rz.resizerWG.Done()
	for {
		s.mu.Lock()
		want, applied, seq := s.size, s.rz.applied, s.rz.resizeSeq
		if s.state != stateRunning || (want == applied && want == s.rz.emuSize) {
			s.resizedLocked(seq)
			s.rz.resizing = false
			s.mu.Unlock()
			return
		}
		if wait := s.rz.pace.take(time.Now()); wait > 0 {
			s.mu.Unlock()
			// Then the latest size, asked for while waiting, wins (or
			// the check above ends the resizer of a closing session).
			s.paceWait(wait)
			continue
		}
		s.resizeEmulatorLocked(want)
		if want == applied { // only the emulator was behind
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.KillTimeout)
		s.observeResize(want)
		err := s.proc.Resize(ctx, want)
		cancel()
		if err != nil {
			// It stays as it was until a new size is asked for (no retry
			// loop against a failing backend).
			s.observeResize(applied)
			s.log.Warn("resize terminal", "err", err, "cols", want.Cols, "rows", want.Rows)
			s.mu.Lock()
			s.resizedLocked(seq) // input waiting for it goes on at the old size
			if s.size != want {  // a newer size came meanwhile: try it
				s.mu.Unlock()
				continue
			}
			s.rz.resizing = false
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.rz.applied = want
		s.resizedLocked(seq)
		s.mu.Unlock()
	}
}

// paceWait sleeps for d, or until the session closes.
func (s *Session) paceWait(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.closeReq:
	}
}

func (s *Session) currentSize() Size {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}
