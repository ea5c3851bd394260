package sessions

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldBackend is a fakeBackend whose instances may have a holder: a fake
// of the holder program that keeps a session's output (with its offsets)
// across the gateway's connections to it. Adopt connects to it; Start,
// with startHeld, starts a held shell.
type heldBackend struct {
	*fakeBackend
	startHeld bool

	mu       sync.Mutex
	holders  map[string]*fakeHolder // by instance name
	conns    []*heldProc
	adoptErr error
	adopts   atomic.Int32
	// adoptGate, when set, holds every Adopt until it is closed.
	adoptGate chan struct{}
	// listed are extra instances HeldInstances reports (held or not).
	listed []string
	// resetErr makes every Reset fail.
	resetErr error
	// adoptPanics makes Adopt panic in the instances it names (a holder
	// whose answer a bug in the protocol code chokes on).
	adoptPanics map[string]bool
}

// fakeHolder is what the holder in one instance holds.
type fakeHolder struct {
	session string
	offset  int64  // the number of out[0]
	out     []byte // every byte from offset on (the holder's ring)
	size    Size
	created time.Time
	conn    *heldProc // the gateway's current connection, if any
}

func newHeldBackend() *heldBackend {
	return &heldBackend{fakeBackend: newFakeBackend(), holders: map[string]*fakeHolder{}}
}

func newHeldRegistry(t *testing.T, cfg Config, hb *heldBackend) *Registry {
	t.Helper()
	cfg.Backend = hb
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, r) })
	return r
}

func shutdown(t *testing.T, r *Registry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// hold makes the instance's holder hold session id whose output so far is
// out, numbered from offset.
func (b *heldBackend) hold(name, id string, offset int64, out string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holders[name] = &fakeHolder{session: id, offset: offset, out: []byte(out), size: Size{Cols: 100, Rows: 30}, created: time.Unix(1700000000, 0)}
}

// print is output of the held shell: the holder keeps it, and sends it to
// the connected gateway, if any.
func (b *heldBackend) print(name, s string) {
	b.mu.Lock()
	h := b.holders[name]
	h.out = append(h.out, s...)
	conn := h.conn
	b.mu.Unlock()
	if conn != nil {
		_, _ = conn.outW.Write([]byte(s))
	}
}

// end has the holder end the gateway's stream with cause, as it does when
// it reset or reaped the session on its own.
func (b *heldBackend) end(name string, cause error) {
	b.mu.Lock()
	conn := b.holders[name].conn
	b.mu.Unlock()
	_ = conn.outW.CloseWithError(cause)
}

func (b *heldBackend) lastConn() *heldProc {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns[len(b.conns)-1]
}

// The fake's holders are keyed by the session's address (INSTANCE or
// INSTANCE+NAME).
func (b *heldBackend) Adopt(_ context.Context, inst Instance, name string) (HeldProcess, error) {
	b.adopts.Add(1)
	if b.adoptGate != nil {
		<-b.adoptGate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.adoptPanics[inst.Name] {
		panic("makeslice: cap out of range")
	}
	if b.adoptErr != nil {
		return nil, b.adoptErr
	}
	key := Addr{inst.Name, name}.String()
	h := b.holders[key]
	if h == nil {
		return nil, fmt.Errorf("instance %s: %w", key, ErrNotHeld)
	}
	return b.connectLocked(inst, key, h), nil
}

// Watch reports nothing; several registries (gateways) may watch at once.
func (b *heldBackend) Watch(ctx context.Context, _ func(InstanceEvent)) error {
	<-ctx.Done()
	return nil
}

func (b *heldBackend) HeldSessions(context.Context) ([]HeldSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []HeldSession
	for key := range b.holders {
		a, _ := ParseAddr(key)
		out = append(out, HeldSession{Instance: Instance{Name: a.Instance, ID: "id-" + a.Instance}, Name: a.Name})
	}
	for _, name := range b.listed {
		out = append(out, HeldSession{Instance: Instance{Name: name, ID: "id-" + name}})
	}
	return out, nil
}

func (b *heldBackend) Start(ctx context.Context, inst Instance, spec StartSpec) (Process, error) {
	if !b.startHeld {
		return b.fakeBackend.Start(ctx, inst, spec)
	}
	b.starts.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	h := &fakeHolder{session: spec.SessionID, size: spec.Size}
	key := Addr{inst.Name, spec.Name}.String()
	b.holders[key] = h
	return b.connectLocked(inst, key, h), nil
}

func (b *heldBackend) connectLocked(inst Instance, key string, h *fakeHolder) *heldProc {
	p := &heldProc{fakeProc: &fakeProc{inst: inst, killed: make(chan struct{})}, b: b, h: h, key: key}
	p.outR, p.outW = io.Pipe()
	p.state = HeldState{Session: h.session, Created: h.created, Offset: h.offset, Replay: slices.Clone(h.out), Size: h.size}
	h.conn = p
	b.conns = append(b.conns, p)
	return p
}

// heldProc is one gateway connection to a fakeHolder.
type heldProc struct {
	*fakeProc
	b     *heldBackend
	h     *fakeHolder
	key   string // the holder's key in b.holders
	state HeldState

	cmu      sync.Mutex
	clients  []int
	resets   []string
	released atomic.Bool
}

func (p *heldProc) Held() HeldState { return p.state }

func (p *heldProc) Reset(_ context.Context, id string) error {
	p.cmu.Lock()
	p.resets = append(p.resets, id)
	p.cmu.Unlock()
	if p.b.resetErr != nil {
		return p.b.resetErr
	}
	p.b.mu.Lock()
	p.b.holders[p.key] = &fakeHolder{session: id, size: p.h.size}
	p.b.mu.Unlock()
	_ = p.outW.CloseWithError(fmt.Errorf("holder: %w", &ResetError{OldSession: p.h.session, NewSession: id}))
	return nil
}

func (p *heldProc) Release() error {
	p.released.Store(true)
	p.b.mu.Lock()
	if p.h.conn == p {
		p.h.conn = nil
	}
	p.b.mu.Unlock()
	_ = p.outW.CloseWithError(io.ErrClosedPipe)
	return nil
}

func (p *heldProc) Clients(n int) {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	p.clients = append(p.clients, n)
}

func (p *heldProc) clientCounts() []int {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	return slices.Clone(p.clients)
}

func (p *heldProc) resetIDs() []string {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	return slices.Clone(p.resets)
}
