package sessions

import "sync"

// wakeup wakes every goroutine waiting on it at once, any number of times.
// Its zero value is ready to use; do not copy one.
type wakeup struct {
	mu sync.Mutex
	ch chan struct{} // closed by fire; nil until someone waits
}

// wait returns a channel that fire closes.
func (w *wakeup) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

// fire wakes those waiting; later waits wait for the next fire.
func (w *wakeup) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}
