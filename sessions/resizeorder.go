package sessions

import "time"

// resizeOrderWait bounds how long input waits for the resizes asked for
// before it. A client that resizes and then types (`stty size`, a full-screen
// program redrawing) expects the shell to see the new size, but the backend
// applies sizes on the resizer's goroutine, outside the session's lock, so
// the input could otherwise overtake them. A healthy engine applies a size
// in milliseconds; one that takes longer than a second is failing, and its
// users' keystrokes then matter more than the order. The bound also stays
// well below Config.InputTimeout's default (5 s), so that waiting here never
// makes a writer give up with ErrInputStalled (see resizeWait).
const resizeOrderWait = time.Second

// resizeWait is resizeOrderWait, kept below half of InputTimeout when that
// is configured shorter.
func (s *Session) resizeWait() time.Duration {
	return min(resizeOrderWait, s.cfg.InputTimeout/2)
}

// resizedLocked records that the size changes up to seq were applied (or
// failed: the shell keeps its old size and waiting longer helps nobody) and
// wakes input waiting for them. Called with mu held.
func (s *Session) resizedLocked(seq uint64) {
	if seq <= s.rz.resizedSeq {
		return
	}
	s.rz.resizedSeq = seq
	if s.rz.resizedCh != nil {
		close(s.rz.resizedCh)
		s.rz.resizedCh = nil
	}
}

// awaitResizes waits until the size changes up to seq are done, for at most
// resizeWait, or until the session closes. The inputter calls it before it
// writes a request, with the seq the request was queued at.
func (s *Session) awaitResizes(seq uint64) {
	s.mu.Lock()
	if s.rz.resizedSeq >= seq {
		s.mu.Unlock()
		return
	}
	timer := s.clock.NewTimer(s.resizeWait())
	defer timer.Stop()
	for s.rz.resizedSeq < seq {
		if s.rz.resizedCh == nil {
			s.rz.resizedCh = make(chan struct{})
		}
		ch := s.rz.resizedCh
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.closeReq:
			return
		case <-timer.Chan():
			s.log.Warn("input goes in before a slow resize", "waited", s.resizeWait().String())
			return
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
}
