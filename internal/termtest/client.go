package termtest

// Taker is how a listener reads a sessions.Client: Ready fires when Take
// may have something; Take returns the queued chunks and an in-band event
// (E: sessions.Event) or the client's cause. (termtest does not import
// sessions, whose own tests use it too.)
type Taker[E comparable] interface {
	Ready() <-chan struct{}
	Take(bufs [][]byte) ([][]byte, E, error)
}

// ClientReader reads a client as a blocking io.Reader does, for tests: the
// output in order, across in-band events (Events lists them), then the
// client's cause, returned again by every later Read. Keep one per
// client: it holds what it took and has not yet returned.
type ClientReader[E comparable] struct {
	c      Taker[E]
	held   [][]byte // taken, not yet returned
	err    error    // the cause Take returned with held, for after it
	events []E
}

// NewClientReader returns a reader of c's output.
func NewClientReader[E comparable](c Taker[E]) *ClientReader[E] {
	return &ClientReader[E]{c: c}
}

// Read blocks until there is output or the cause.
func (r *ClientReader[E]) Read(p []byte) (int, error) {
	for {
		if len(r.held) > 0 {
			n := copy(p, r.held[0])
			if r.held[0] = r.held[0][n:]; len(r.held[0]) == 0 {
				r.held = r.held[1:]
			}
			return n, nil
		}
		if r.err != nil {
			return 0, r.err
		}
		var ev, none E
		r.held, ev, r.err = r.c.Take(r.held[:0])
		if ev != none {
			r.events = append(r.events, ev)
			continue
		}
		if len(r.held) == 0 && r.err == nil {
			<-r.c.Ready()
		}
	}
}

// Events returns the in-band events taken so far, in order: each one
// after the output before it was taken.
func (r *ClientReader[E]) Events() []E { return r.events }
