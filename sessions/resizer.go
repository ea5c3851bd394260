package sessions

import "context"

// startResizerLocked starts the resizer when a new size waits for the
// backend and none runs. Called with mu held.
func (s *Session) startResizerLocked() {
	if s.resizing {
		return
	}
	if s.state != stateRunning || s.size == s.applied {
		s.resizedLocked(s.resizeSeq) // nothing for input to wait for
		return
	}
	s.resizing = true
	s.resizerWG.Add(1)
	go s.resizer()
}

// resizer applies the latest requested size outside any lock, so a slow
// backend resize never stalls output or other clients. It returns once the
// applied size is the latest (or the session is closing); sizes requested
// meanwhile are coalesced into the latest.
func (s *Session) resizer() {
	defer s.resizerWG.Done()
	for {
		s.mu.Lock()
		want, applied, seq := s.size, s.applied, s.resizeSeq
		if want == applied || s.state != stateRunning {
			s.resizedLocked(seq)
			s.resizing = false
			s.mu.Unlock()
			return
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
			s.resizing = false
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.applied = want
		s.resizedLocked(seq)
		s.mu.Unlock()
	}
}

func (s *Session) currentSize() Size {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}
