package sessions

import (
	"slices"
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
	started   atomic.Bool   // the inputter took it from the queue
	progress  chan struct{} // a chunk went in (capacity 1, latest wins)
	done      chan error    // the request ended (capacity 1)
	client    bool          // a client's input (observed), not an answer
	from      *Client       // the client whose input it is (nil: an answer)
	resizeSeq uint64        // the size changes asked for before it (see resizeorder.go)
}

// inputter is the one goroutine that writes to the shell, so that a shell
// that stops reading blocks it, not the listeners: their Write calls stay
// interruptible. It runs only while input waits (enqueueInput starts it):
// an idle session has none. It stops once the queue is empty or the session
// closes; a write it is blocked in ends when Kill releases the terminal
// stream, and run waits for it (inputWG).
func (s *Session) inputter() {
	defer s.inq.inputWG.Done()
	for {
		s.mu.Lock()
		if len(s.inq.inputQ) == 0 || s.state != stateRunning {
			clear(s.inq.inputQ) // their writers see closeReq
			s.inq.inputQ = s.inq.inputQ[:0]
			s.inq.inputting = false
			s.mu.Unlock()
			return
		}
		req := s.inq.inputQ[0]
		s.inq.inputQ[0] = nil
		s.inq.inputQ = s.inq.inputQ[1:]
		req.started.Store(true)
		s.mu.Unlock()
		s.awaitResizes(req.resizeSeq)
		req.done <- s.writeInput(req)
	}
}

// enqueueInput queues req for the inputter, starting it when none runs. It
// also drops requests whose writers gave up, so a shell that takes no input
// for long does not collect them. False when the session is closing.
func (s *Session) enqueueInput(req *inputReq) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		return false
	}
	s.inq.inputQ = slices.DeleteFunc(s.inq.inputQ, func(r *inputReq) bool { return r.abandoned.Load() })
	s.typedLocked(req.from) // a size it brings applies first
	req.resizeSeq = s.rz.resizeSeq
	s.inq.inputQ = append(s.inq.inputQ, req)
	if !s.inq.inputting {
		s.inq.inputting = true
		s.inq.inputWG.Add(1)
		go s.inputter()
	}
	return true
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
	req := &inputReq{p: p, progress: make(chan struct{}, 1), done: make(chan error, 1), client: true, from: c}
	select {
	case <-c.done:
		return 0, c.Cause()
	default:
	}
	if !s.enqueueInput(req) {
		return 0, errSessionClosing
	}
	timer := s.clock.NewTimer(s.cfg.InputTimeout)
	defer timer.Stop()
	closing := s.closeReq
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
		case <-closing:
			if req.started.Load() {
				closing = nil // the write ends when Kill releases the stream
				continue
			}
			req.abandoned.Store(true) // dropped from the queue unwritten
			return 0, errSessionClosing
		case <-timer.Chan():
			req.abandoned.Store(true)
			return int(req.written.Load()), ErrInputStalled
		}
	}
}
