package sessions

import (
	"sync/atomic"
)

// inputChunk bounds one write to the shell, so that a slow but reading
// shell shows progress (and keeps its writer's deadline moving) while a
// large paste goes in.
const inputChunk = 8 << 10

// inputReq is one Client.Write handed to the session's inputter.
type inputReq struct {
	p         []byte
	written   atomic.Int64
	abandoned atomic.Bool   // the writer gave up: stop at the next chunk
	progress  chan struct{} // a chunk went in (capacity 1, latest wins)
	done      chan error    // the request ended (capacity 1)
	client    bool          // a client's input (observed), not an answer
}

// inputter is the one goroutine that writes to the shell, so that a shell
// that stops reading blocks it, not the listeners: their Write calls stay
// interruptible. It stops on Close; a write it is blocked in ends when Kill
// releases the terminal stream.
func (s *Session) inputter() {
	defer close(s.inputGone)
	for {
		select {
		case req := <-s.inputCh:
			req.done <- s.writeInput(req)
		case <-s.closeReq:
			return
		}
	}
}

func (s *Session) writeInput(req *inputReq) error {
	for off := 0; off < len(req.p); {
		if req.abandoned.Load() {
			return nil
		}
		end := min(off+inputChunk, len(req.p))
		n, err := s.proc.Write(req.p[off:end])
		if req.client && n > 0 {
			s.observeInput(req.p[off : off+n])
		}
		off += n
		req.written.Add(int64(n))
		select {
		case req.progress <- struct{}{}:
		default:
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// input hands p to the inputter and waits for it, for the client to be
// closed, or for InputTimeout without progress.
func (s *Session) input(c *Client, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	req := &inputReq{p: p, progress: make(chan struct{}, 1), done: make(chan error, 1), client: true}
	timer := s.clock.NewTimer(s.cfg.InputTimeout)
	defer timer.Stop()
	select {
	case s.inputCh <- req:
	case <-c.done:
		return 0, c.Cause()
	case <-s.closeReq:
		return 0, errSessionClosing
	case <-timer.Chan():
		return 0, ErrInputStalled
	}
	for {
		select {
		case err := <-req.done:
			if err != nil && s.closing() {
				err = errSessionClosing
			}
			return int(req.written.Load()), err
		case <-req.progress:
			timer.Reset(s.cfg.InputTimeout)
		case <-c.done:
			req.abandoned.Store(true)
			return int(req.written.Load()), c.Cause()
		case <-timer.Chan():
			req.abandoned.Store(true)
			return int(req.written.Load()), ErrInputStalled
		}
	}
}
