package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/backend/heldconn"
	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/sessions"
)

// heldProcess is a gateway's connection to the holder in a pod: a non-TTY
// exec of "termgate-holder attach SOCKET" carrying the holder protocol on
// its stdin and stdout. The shell is the holder's child, not the exec's:
// the exec (and the gateway) may go, the shell stays.
type heldProcess struct {
	*heldconn.Conn
	b    *Backend
	name string
	t    target
	dir  string    // the holder's directory (holderDirs)
	x    *execConn // the attach exec the connection runs on

	kmu    sync.Mutex // serializes Kill
	killed bool
	ending atomic.Bool // Kill started: the stream's end is the kill's
}

var _ sessions.HeldProcess = (*heldProcess)(nil)

// dialTimeout bounds the status line, the hello and the replay of a
// connection, so a holder that does not answer cannot hang a Start or an
// Adopt.
const dialTimeout = 15 * time.Second

// connect runs an attach exec to the holder in dir and says hello (this
// build's holder binary is uploaded next to a holder another build
// started). An error wrapping sessions.ErrNotHeld means no holder answers
// there; a *holder.VersionError, a holder of another protocol version
// (left alone).
func (b *Backend) connect(ctx context.Context, inst sessions.Instance, t target, dir string) (*heldProcess, error) {
	cmd := []string{"/bin/sh", "-c", attachScript, "termgate-attach", b.held.bin.Hash, socketIn(dir)}
	for attempt := 0; ; attempt++ {
		x, line, err := b.execStatus(ctx, inst, t, cmd)
		if err != nil {
			return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, err)
		}
		if mode, ok := strings.CutPrefix(line, "termgate: no holder; "); ok && attempt == 0 {
			x.Close()
			err := b.upload(ctx, t, dir, mode)
			var refused *errUploadRefused
			if errors.As(err, &refused) {
				return nil, fmt.Errorf("connect to the holder in %q: bring this build's holder binary: %w", inst.Name, err)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if line != "termgate: attach" {
			code, xerr := x.exit() // before Close, which would end it as cancelled
			x.Close()
			if xerr != nil {
				return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, b.execErr(t, xerr))
			}
			return nil, fmt.Errorf("connect to the holder in %q: status %d: %s%s", inst.Name, code, line, stderrOf(x))
		}
		return b.handshake(ctx, inst, t, dir, x, 0)
	}
}

// handshake says hello to the holder over x and reads the replay. clients
// is the count the holder starts with for this gateway (see
// HelloMsg.Clients).
func (b *Backend) handshake(ctx context.Context, inst sessions.Instance, t target, dir string, x *execConn, clients int) (*heldProcess, error) {
	stop := x.deadline(ctx)
	x.keepOpen.Store(true)
	c, rep, err := holder.DialClients(x, b.gatewayID, "", 0, clients)
	var replay []byte
	if err == nil {
		replay, err = c.ReadReplay()
	}
	x.keepOpen.Store(false)
	stop()
	if err != nil {
		if ctx.Err() == nil {
			_, _ = x.exit() // let the attach say on stderr why it ended
		}
		x.shutdown()
		var verr *holder.VersionError
		switch {
		case errors.As(err, &verr):
			return nil, fmt.Errorf("instance %q: %w", inst.Name, err)
		case strings.Contains(x.stderr.String(), "no holder answers"):
			return nil, fmt.Errorf("instance %q: %w (stale socket %s)", inst.Name, sessions.ErrNotHeld, socketIn(dir))
		case ctx.Err() != nil:
			return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, ctx.Err())
		}
		return nil, fmt.Errorf("connect to the holder in %q: %w %s", inst.Name, err, x.stderr.String())
	}
	p := &heldProcess{b: b, name: inst.Name, t: t, dir: dir, x: x}
	// A connection that ended without the holder saying why is io.EOF,
	// which the registry classifies by watching the instance.
	p.Conn = heldconn.New(inst.Name, b.gatewayID, c, rep, replay, clients,
		heldconn.Hooks{Lost: func() error { return io.EOF }, Exited: p.exited})
	return p, nil
}

// exited is the cause for the holder's report that the shell exited with
// code. A holder dies with its pod, and may report the signal that killed
// its shell before the API server reports the pod going: a signal exit
// while the pod is deleted is ErrInstanceGone.
func (p *heldProcess) exited(code int) error {
	if code >= 128 && !p.ending.Load() && p.b.stopping(p.t) {
		return sessions.ErrInstanceGone
	}
	return &sessions.ExitError{Code: code}
}

// stopping reports whether the target's pod is being deleted or its
// container is gone, waiting up to two seconds for the API server to say
// so.
func (b *Backend) stopping(t target) bool {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if b.gone(ctx, t) || b.deleting(ctx, t) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill ends the held session for good: the holder kills the shell and
// everything it started, then exits. Kill returns once the holder's socket
// is gone (or the pod is).
func (p *heldProcess) Kill(ctx context.Context) error {
	p.kmu.Lock()
	defer p.kmu.Unlock()
	if p.killed {
		return nil
	}
	p.ending.Store(true)
	err := p.Client().End()
	if err == nil {
		// The end frame is on its way through the exec's stdin copier:
		// closing the stream now could drop it. The holder ends the
		// stream once it ended the session.
		t := time.NewTimer(5 * time.Second)
		select {
		case <-p.x.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	_ = p.Release()
	inst := sessions.Instance{Name: p.name}
	if err != nil { // the connection broke: end it through a new one
		if p.b.gone(ctx, p.t) {
			p.killed = true // the pod went: so did the holder
			return nil
		}
		q, cerr := p.b.connect(ctx, inst, p.t, p.dir)
		if errors.Is(cerr, sessions.ErrNotHeld) {
			p.killed = true
			return nil
		}
		if cerr != nil {
			return fmt.Errorf("end the held session in %q: %w", p.name, cerr)
		}
		err = q.Client().End()
		if err == nil {
			t := time.NewTimer(5 * time.Second)
			select {
			case <-q.x.done:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		_ = q.Release()
		if err != nil {
			return fmt.Errorf("end the held session in %q: %w", p.name, err)
		}
	}
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		dirs, err := p.b.holderSockets(ctx, p.t, []string{p.dir})
		if err != nil {
			if p.b.gone(ctx, p.t) {
				p.killed = true
				return nil
			}
			return fmt.Errorf("end the held session in %q: %w", p.name, err)
		}
		if len(dirs) == 0 {
			p.killed = true
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("end the held session in %q: the holder still runs: %w", p.name, ctx.Err())
		case <-t.C:
		}
	}
}
