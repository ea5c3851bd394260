package termtest

// Taker is how a listener reads a sessions.Client: Ready fires when Take
// may have something; Take returns the queued chunks and, in band, an event
// or the client's cause. (termtest does not import sessions, whose own tests
// use it too.)
type Taker interface {
	Ready() <-chan struct{}
	Take(bufs [][]byte) ([][]byte, error)
}

// ClientReader reads a client as a blocking io.Reader does, for tests: the
// output in order, then what Take returned with it, once: a reset
// (*sessions.ResetError, after which reading goes on with the fresh
// session) or the client's cause (returned again by every later Read).
// Keep one per client: it holds what it took and has not yet returned.
type ClientReader struct {
	c    Taker
	held [][]byte // taken, not yet returned
	err  error    // what Take returned with held, for after it
}

// NewClientReader returns a reader of c's output.
func NewClientReader(c Taker) *ClientReader { return &ClientReader{c: c} }

// Read blocks until there is output, an event or the cause.
func (r *ClientReader) Read(p []byte) (int, error) {
	for {
		if len(r.held) > 0 {
			n := copy(p, r.held[0])
			if r.held[0] = r.held[0][n:]; len(r.held[0]) == 0 {
				r.held = r.held[1:]
			}
			return n, nil
		}
		if r.err != nil {
			err := r.err
			r.err = nil
			return 0, err
		}
		r.held, r.err = r.c.Take(r.held[:0])
		if len(r.held) == 0 && r.err == nil {
			<-r.c.Ready()
		}
	}
}
