package sshd

import (
	"context"
	"sync"
)

// tracker counts running goroutines so that Shutdown and Close can wait
// for them. Unlike a sync.WaitGroup, add may be called at any time, also
// while wait is waiting for the count to reach zero.
type tracker struct {
	mu   sync.Mutex    // guards n and idle
	n    int           // goroutines running
	idle chan struct{} // closed when n drops to zero
}

// Go runs f in a tracked goroutine.
func (t *tracker) Go(f func()) {
	t.add()
	go func() {
		defer t.done()
		f()
	}()
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
	}
}

// wait returns once no tracked goroutine runs, or ctx.Err() when ctx ends
// first.
func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
