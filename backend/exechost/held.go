package exechost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/sessions"
)

// HeldShell is a gateway's connection to the holder of an instance: a
// non-TTY exec of "termgate-holder attach SOCKET" (or the start exec's
// "serve --attach") carrying the holder protocol. The shell is the
// holder's child, not the exec's: the exec (and the gateway) may go, the
// shell stays.
type HeldShell struct {
	*conn
	h    *Host
	inst sessions.Instance
	dir  string // the holder's directory (one of HolderDirs)
	name string // the session's name in the instance ("" the default)
	x    *execConn

	kmu    sync.Mutex // serializes Kill
	killed bool
	// ending is set once Kill starts: the end of the stream is then the
	// kill's, and Read does not wait for the instance to say why.
	ending atomic.Bool
}

var _ sessions.HeldProcess = (*HeldShell)(nil)

// Read is the connection's, but for io.EOF once Kill started: the end is
// then the kill's.
func (p *HeldShell) Read(b []byte) (int, error) {
	n, err := p.conn.Read(b)
	if err != nil && p.ending.Load() {
		return n, io.EOF
	}
	return n, err
}

// Dir is the holder's directory.
func (p *HeldShell) Dir() string { return p.dir }

// connect runs an attach exec to the holder in dir and says hello (this
// build's holder binary is uploaded next to a holder another build
// started). An error wrapping sessions.ErrNotHeld means no holder answers
// there (ErrForeign too for another deployment's holder); a
// *holder.VersionError, a holder of another protocol version (left alone).
func (h *Host) connect(ctx context.Context, inst sessions.Instance, dir, name string) (*HeldShell, error) {
	run, install, err := h.holderCommand(ctx, inst, dir)
	if err != nil {
		return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, err)
	}
	cmd := append(run, "attach", SocketFor(dir, name))
	if install != "" { // a holder another build started: bring ours for the attach
		cmd = append(run, "attach", "--install-as", install, SocketFor(dir, name))
	}
	x, err := h.openExec(ctx, inst, cmd)
	if err != nil {
		return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, err)
	}
	return h.handshake(ctx, inst, dir, name, x, 0)
}

// errUntrusted marks a holder directory, socket or listener that the
// holder's attach refused: not the exec user's alone.
var errUntrusted = errors.New("refused: not the exec user's alone")

// handshake says hello to the holder over x and reads the replay. clients
// is the count the holder starts with for this gateway (see
// HelloMsg.Clients).
func (h *Host) handshake(ctx context.Context, inst sessions.Instance, dir, name string, x *execConn, clients int) (*HeldShell, error) {
	stop := x.deadline(ctx)
	x.keepOpen.Store(true)
	c, rep, err := holder.DialClients(x, h.held.key(inst), h.gatewayID, "", 0, clients)
	var replay []byte
	if err == nil {
		replay, err = c.ReadReplay()
	}
	x.keepOpen.Store(false)
	stop()
	if errors.Is(err, holder.ErrForeign) {
		// Another deployment's holder (or a fake): nothing of it is
		// believed, and it is left alone; the exec has nothing to say.
		x.shutdown()
		h.foreignHolder(inst, dir)
		return nil, fmt.Errorf("instance %q: %w: %w (%s)", inst.Name, sessions.ErrNotHeld, ErrForeign, SocketFor(dir, name))
	}
	if err != nil {
		var werr error
		if ctx.Err() == nil {
			_, werr = x.exit() // let the attach say on stderr why it ended
		}
		x.shutdown()
		stderr := strings.TrimSpace(x.s.Stderr())
		var verr *holder.VersionError
		switch {
		case errors.As(err, &verr):
			return nil, fmt.Errorf("instance %q: %w", inst.Name, err)
		case strings.Contains(stderr, "cannot hold here"):
			// Another user's directory, socket or listener (the attach
			// process refused it: holder.CheckHome, SO_PEERCRED): never
			// adopted; the session starts elsewhere.
			h.log.Warn(h.name+": refused to connect to a holder that is not the exec user's", "instance", inst.Name, "dir", dir, "why", stderr)
			return nil, fmt.Errorf("instance %q: %w: %w (%s: %s)", inst.Name, sessions.ErrNotHeld, errUntrusted, SocketFor(dir, name), stderr)
		case strings.Contains(stderr, "no holder answers"):
			return nil, fmt.Errorf("instance %q: %w (stale socket %s)", inst.Name, sessions.ErrNotHeld, SocketFor(dir, name))
		case ctx.Err() != nil:
			return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, ctx.Err())
		case errors.Is(werr, ErrNoStatus): // the exec itself failed
			return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, werr)
		}
		return nil, fmt.Errorf("connect to the holder in %q: %w %s", inst.Name, err, stderr)
	}
	h.ownHolder(inst, dir)
	p := &HeldShell{h: h, inst: inst, dir: dir, name: name, x: x}
	p.conn = newConn(inst.Name, h.gatewayID, c, rep, replay, clients, connHooks{Lost: p.lost, Exited: p.exited})
	return p, nil
}

// exited is the cause for the holder's report that the shell exited with
// code: a signal exit while the instance stops is the instance's stop (a
// holder dies with its instance, and may report the signal that killed its
// shell before the backend reports the instance going).
func (p *HeldShell) exited(code int) error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	return p.h.exitCause(ctx, p.inst, code, p.ending.Load)
}

// lost is the cause for a connection to the holder that ended without the
// holder saying why: the instance stopped; the holder died (no holder
// answers at its socket, or one that holds another session), and then its
// session's jobs are ended before the session is (endHolderless); or only
// the connection broke, or it cannot be told (the engine does not
// answer), and the shell runs on. io.EOF when the shell is being killed
// anyway.
func (p *HeldShell) lost() error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	switch {
	case p.h.stopping(ctx, p.inst, p.ending.Load):
		return sessions.ErrInstanceGone
	case p.ending.Load():
		return io.EOF
	}
	q, err := p.h.connect(ctx, p.inst, p.dir, p.name)
	switch {
	case err == nil:
		alive := q.Held().Session == p.Held().Session
		_ = q.Release()
		if !alive {
			return p.h.endHolderless(ctx, p.inst, p.dir, p.Held().Session, "another session's holder answers there")
		}
	case errors.Is(err, sessions.ErrNotHeld) && !errors.Is(err, errUntrusted):
		return p.h.endHolderless(ctx, p.inst, p.dir, p.Held().Session, "no holder answers at its socket")
	}
	p.h.log.Warn(p.h.name+": connection to the holder broke; the shell keeps running", "instance", p.inst.Name)
	return sessions.ErrHolderLost
}

// Kill ends the held session for good: the holder kills the shell and
// everything it started, then exits. Kill returns once the holder's socket
// is gone (or the instance is).
func (p *HeldShell) Kill(ctx context.Context) error {
	p.kmu.Lock()
	defer p.kmu.Unlock()
	if p.killed {
		return nil
	}
	p.ending.Store(true)
	err := p.end(ctx, p)
	if err != nil { // the connection broke: end it through a new one
		if done, err := p.endAgain(ctx); done || err != nil {
			return err
		}
	}
	// The end frame can still be lost after End returned: it goes through
	// the exec's stdin, which the backend may close before passing it on
	// when the stream is closed right after (seen once in CI under load:
	// the holder took it for a gateway leaving). If the holder still runs
	// after a while, say it again through a new connection.
	again := time.Now().Add(3 * time.Second)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		live, err := p.h.x.Exists(ctx, p.inst, []string{SocketFor(p.dir, p.name)})
		switch {
		case err != nil && p.h.gone(ctx, p.inst):
			live = []bool{false}
		case err != nil:
			return fmt.Errorf("end the held session in %q: %w", p.inst.Name, err)
		}
		if !live[0] {
			p.killed = true
			return nil
		}
		if !again.IsZero() && time.Now().After(again) {
			again = time.Time{}
			// An error here (the holder is on its way out, say) is no
			// reason to fail: the wait below decides.
			if done, _ := p.endAgain(ctx); done {
				return nil
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("end the held session in %q: the holder still runs: %w", p.inst.Name, ctx.Err())
		case <-t.C:
		}
	}
}

// end sends q's holder the end of its session and drops the connection
// once the holder ended the exec's stream (closing it at once could drop
// the end frame on its way through the stdin copier), or after 5 s.
func (p *HeldShell) end(ctx context.Context, q *HeldShell) error {
	err := q.Client().End()
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = q.x.s.Wait(wctx)
		cancel()
	}
	_ = q.Release()
	return err
}

// endAgain ends the held session through a new connection to its holder.
// done reports that the session is over already (the instance stopped, or
// no holder holds it any more).
func (p *HeldShell) endAgain(ctx context.Context) (done bool, err error) {
	if p.h.gone(ctx, p.inst) {
		p.killed = true // the instance stopped: so did the holder
		return true, nil
	}
	q, err := p.h.connect(ctx, p.inst, p.dir, p.name)
	if errors.Is(err, sessions.ErrNotHeld) {
		p.killed = true
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("end the held session in %q: %w", p.inst.Name, err)
	}
	if err := p.end(ctx, q); err != nil {
		return false, fmt.Errorf("end the held session in %q: %w", p.inst.Name, err)
	}
	return false, nil
}
