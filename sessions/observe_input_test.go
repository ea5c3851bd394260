package sessions

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// inputObserver is a fakeObserver that also observes input.
type inputObserver struct {
	fakeObserver
	mu sync.Mutex
	in strings.Builder
}

func (o *inputObserver) Input(p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.in.Write(p)
}

func (o *inputObserver) input() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.in.String()
}

// An InputObserver gets exactly what clients wrote to the shell: not a
// read-only client's refused input.
func TestObserverSeesClientInput(t *testing.T) {
	var o *inputObserver
	var mu sync.Mutex
	r, fb := newTestRegistry(t, Config{Observe: func(s ObservedSession) Observer {
		mu.Lock()
		defer mu.Unlock()
		o = &inputObserver{fakeObserver: fakeObserver{start: s, closed: make(chan struct{})}}
		return o
	}})
	c := attach(t, r, "web1", AttachOptions{})
	ro := attach(t, r, "web1", AttachOptions{ReadOnly: true})
	if _, err := c.Write([]byte("echo secret\r")); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Write([]byte("rm -rf /\r")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only write: %v", err)
	}
	buf := []byte("ls\r")
	if _, err := c.Write(buf); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(fb.last().inputString(), "ls\r") })
	mu.Lock()
	got := o.input()
	mu.Unlock()
	if got != "echo secret\rls\r" || got != fb.last().inputString() {
		t.Fatalf("observer saw input %q, the shell got %q", got, fb.last().inputString())
	}
}
