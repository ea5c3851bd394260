package sessions

// answer sends a replayer's reply to a terminal query to the shell through
// the inputter's queue, so it never splits a client's input. It gives up when the
// session closes.
func (s *Session) answer(p []byte) {
	if len(p) == 0 {
		return
	}
	req := &inputReq{p: p, progress: make(chan struct{}, 1), done: make(chan error, 1)}
	if !s.enqueueInput(req) {
		return
	}
	select {
	case <-req.done:
	case <-s.closeReq:
		req.abandoned.Store(true)
	}
}
