package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
)

// fakeBackend is a Backend whose shells are pipes the test drives.
type fakeBackend struct {
	mu      sync.Mutex
	missing map[string]bool
	paused  map[string]bool // Lookup says ErrPaused
	procs   []*fakeProc
	starts  atomic.Int32
	lookups atomic.Int32
	events  func(InstanceEvent)
	watchOn chan struct{}
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{missing: map[string]bool{}, paused: map[string]bool{}, watchOn: make(chan struct{})}
}

func (b *fakeBackend) Lookup(_ context.Context, name string) (Instance, error) {
	b.lookups.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.missing[name] {
		return Instance{}, ErrNotFound
	}
	if b.paused[name] {
		return Instance{}, ErrPaused
	}
	return Instance{Name: name, ID: "id-" + name}, nil
}

func (b *fakeBackend) Start(_ context.Context, inst Instance, spec StartSpec) (Process, error) {
	b.starts.Add(1)
	p := &fakeProc{spec: spec, inst: inst, killed: make(chan struct{})}
	p.outR, p.outW = io.Pipe()
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p, nil
}

func (b *fakeBackend) Watch(ctx context.Context, ev func(InstanceEvent)) error {
	b.mu.Lock()
	b.events = ev
	b.mu.Unlock()
	close(b.watchOn)
	<-ctx.Done()
	return nil
}

func (b *fakeBackend) Sweep(context.Context) error { return nil }
func (b *fakeBackend) Ping(context.Context) error  { return nil }

func (b *fakeBackend) last() *fakeProc {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.procs[len(b.procs)-1]
}

// fakeProc's output is whatever the test writes with emit; input is recorded.
type fakeProc struct {
	spec       StartSpec
	inst       Instance
	outR       *io.PipeReader
	outW       *io.PipeWriter
	mu         sync.Mutex
	input      []byte
	sizes      []Size
	exitCode   int
	killed     chan struct{}
	killOnce   sync.Once
	killCalled atomic.Bool
	// stuck, when set, blocks Write until Kill (a shell not reading).
	stuck atomic.Bool
	// killFails makes that many Kill calls fail before one succeeds.
	killFails atomic.Int32
	kills     atomic.Int32
	// resizeGate, when set (before the resize), holds Resize until it is
	// closed or the call's context ends (an engine slow to resize);
	// resizeEntered then gets a value as each Resize starts waiting.
	resizeGate    chan struct{}
	resizeEntered chan struct{}
	// events records resizes ("resize COLSxROWS") and input ("input ...")
	// in the order the backend saw them.
	events []string
}

func (p *fakeProc) emit(s string) { _, _ = p.outW.Write([]byte(s)) }

// exit ends the output as a shell exiting with code does: Read ends with
// the cause (the Process contract).
func (p *fakeProc) exit(code int) {
	p.mu.Lock()
	p.exitCode = code
	p.mu.Unlock()
	_ = p.outW.CloseWithError(&ExitError{Code: code})
}

func (p *fakeProc) Read(b []byte) (int, error) { return p.outR.Read(b) }

func (p *fakeProc) Write(b []byte) (int, error) {
	if p.stuck.Load() {
		<-p.killed
		return 0, errors.New("killed")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.input = append(p.input, b...)
	p.events = append(p.events, "input "+string(b))
	return len(b), nil
}

func (p *fakeProc) Resize(ctx context.Context, s Size) error {
	p.mu.Lock()
	gate, entered := p.resizeGate, p.resizeEntered
	p.mu.Unlock()
	if gate != nil {
		if entered != nil {
			entered <- struct{}{}
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes = append(p.sizes, s)
	p.events = append(p.events, fmt.Sprintf("resize %dx%d", s.Cols, s.Rows))
	return nil
}

func (p *fakeProc) eventList() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

func (p *fakeProc) Wait(context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitCode, nil
}

func (p *fakeProc) Kill(context.Context) error {
	p.kills.Add(1)
	if p.killFails.Add(-1) >= 0 {
		return errors.New("engine unreachable")
	}
	p.killOnce.Do(func() {
		p.killCalled.Store(true)
		_ = p.outW.CloseWithError(errors.New("killed"))
		close(p.killed)
	})
	return nil
}

func (p *fakeProc) inputString() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.input)
}
