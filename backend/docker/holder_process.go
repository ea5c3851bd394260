package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/sessions"
)

// heldProcess is a gateway's connection to the holder of an instance: an
// exec of "termgate-holder attach SOCKET" (non-TTY: stdin hijacked, stdout
// demultiplexed) carrying the holder protocol. The shell is the holder's
// child, not the exec's: the exec (and the gateway) may die, the shell
// stays.
type heldProcess struct {
	b         *Backend
	name      string
	container string
	dir       string // the holder's directory (holderDirs)
	conn      net.Conn
	demux     *demuxReader
	c         *holder.Client
	state     sessions.HeldState

	clients  atomic.Int64
	wake     chan struct{} // the clients writer has a new count to send
	stop     chan struct{}
	wg       sync.WaitGroup
	released atomic.Bool
	once     sync.Once

	kmu    sync.Mutex // serializes Kill
	killed bool
}

var _ sessions.HeldProcess = (*heldProcess)(nil)

// dialTimeout bounds the hello and the replay of a connection, so a holder
// that does not answer cannot hang a Start or an Adopt.
const dialTimeout = 15 * time.Second

// connect runs an attach exec to the holder in dir and says hello. An
// error wrapping sessions.ErrNotHeld means no holder answers there; a
// *holder.VersionError, a holder of another protocol version (left alone).
func (b *Backend) connect(ctx context.Context, inst sessions.Instance, dir string) (*heldProcess, error) {
	bin := holderPath(dir, b.held.bin.Hash)
	have, err := b.exists(ctx, inst.ID, bin)
	if err != nil {
		return nil, err
	}
	cmd := []string{bin, "attach", socketIn(dir)}
	if !have { // a holder another build started: bring ours for the attach
		staged, err := b.upload(ctx, inst.ID, dir)
		if err != nil {
			return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, err)
		}
		cmd = []string{staged, "attach", "--install-as", bin, socketIn(dir)}
	}
	created, err := b.cli.ContainerExecCreate(ctx, inst.ID, container.ExecOptions{
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          cmd,
	})
	if err != nil {
		return nil, b.engineErr(fmt.Sprintf("connect to the holder in %q", inst.Name), err)
	}
	hr, err := b.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, b.engineErr(fmt.Sprintf("connect to the holder in %q", inst.Name), err)
	}
	p := &heldProcess{
		b: b, name: inst.Name, container: inst.ID, dir: dir, conn: hr.Conn,
		demux: newDemuxReader(hr.Reader), wake: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	deadline := time.Now().Add(dialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = hr.Conn.SetDeadline(deadline)
	stopWatch := closeOnDone(ctx, hr.Conn)
	c, rep, err := holder.Dial(execStream{conn: hr.Conn, demux: p.demux}, b.gatewayID, "", 0)
	var replay []byte
	if err == nil {
		if replay, err = c.ReadReplay(); err != nil {
			c.Close()
		}
	}
	stopWatch()
	if err != nil {
		hr.Close()
		var verr *holder.VersionError
		switch {
		case errors.As(err, &verr):
			return nil, fmt.Errorf("instance %q: %w", inst.Name, err)
		case strings.Contains(p.demux.Stderr(), "no holder answers"):
			return nil, fmt.Errorf("instance %q: %w (stale socket %s)", inst.Name, sessions.ErrNotHeld, socketIn(dir))
		case ctx.Err() != nil:
			return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, ctx.Err())
		}
		return nil, fmt.Errorf("connect to the holder in %q: %w %s", inst.Name, err, strings.TrimSpace(p.demux.Stderr()))
	}
	_ = hr.Conn.SetDeadline(time.Time{})
	p.c = c
	h := c.Hello
	p.state = sessions.HeldState{
		Session: rep.Session, Offset: rep.Start, Replay: replay,
		Size: sessions.Size{Cols: h.Cols, Rows: h.Rows},
	}
	if h.Created > 0 {
		p.state.Created = time.UnixMilli(h.Created)
	}
	p.wg.Go(p.sendClients)
	return p, nil
}

// execStream is the attach exec's stream as holder.Dial sees it: input
// to the hijacked connection, output demultiplexed from it.
type execStream struct {
	conn  net.Conn
	demux *demuxReader
}

func (s execStream) Read(b []byte) (int, error)  { return s.demux.Read(b) }
func (s execStream) Write(b []byte) (int, error) { return s.conn.Write(b) }
func (s execStream) Close() error                { return s.conn.Close() }

// sendClients sends the latest client count whenever it changes, so that
// Clients never blocks on the connection.
func (p *heldProcess) sendClients() {
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
			_ = p.c.Clients(int(p.clients.Load()))
		}
	}
}

func (p *heldProcess) Held() sessions.HeldState { return p.state }

func (p *heldProcess) Clients(n int) {
	p.clients.Store(int64(n))
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Read returns the shell's output, and the holder's endings as the
// registry's causes.
func (p *heldProcess) Read(b []byte) (int, error) {
	n, err := p.c.Read(b)
	if err == nil {
		return n, nil
	}
	var reset *holder.ErrReset
	switch {
	case errors.As(err, &reset):
		return n, &sessions.ResetError{OldSession: reset.OldSession, NewSession: reset.NewSession, By: "another gateway"}
	case p.released.Load():
		return n, io.EOF
	case errors.Is(err, io.EOF):
		m, ok := p.c.Exit()
		switch {
		case !ok:
			return n, io.EOF // the connection was lost, the holder may well live
		case m.Cause == "idle":
			return n, sessions.ErrIdle
		case m.Cause == "":
			return n, &sessions.ExitError{Code: m.Code}
		}
		return n, fmt.Errorf("the holder in %q ended the session: %s", p.name, m.Cause)
	}
	return n, fmt.Errorf("holder connection in %q: %w", p.name, err)
}

func (p *heldProcess) Write(b []byte) (int, error) {
	n, err := p.c.Write(b)
	if err != nil {
		return n, fmt.Errorf("write to the holder in %q: %w", p.name, err)
	}
	return n, nil
}

func (p *heldProcess) Resize(_ context.Context, size sessions.Size) error {
	if !size.Valid() {
		return fmt.Errorf("resize shell in %q to %dx%d: %w", p.name, size.Cols, size.Rows, sessions.ErrBadSize)
	}
	if err := p.c.Resize(context.Background(), size.Cols, size.Rows); err != nil {
		return fmt.Errorf("resize the held shell in %q: %w", p.name, err)
	}
	return nil
}

// Wait returns the held shell's exit status once Read ended with it.
func (p *heldProcess) Wait(context.Context) (int, error) {
	if m, ok := p.c.Exit(); ok {
		return m.Code, nil
	}
	return -1, fmt.Errorf("the connection to the holder in %q was lost before the session ended", p.name)
}

// Reset has the holder kill the session and start a fresh shell as id;
// every gateway's Read then ends with a *sessions.ResetError.
func (p *heldProcess) Reset(_ context.Context, id string) error {
	if !sessionIDPattern.MatchString(id) {
		return fmt.Errorf("reset the held session in %q: invalid session id %q", p.name, id)
	}
	if err := p.c.Reset(id, p.b.gatewayID); err != nil {
		return fmt.Errorf("reset the held session in %q: %w", p.name, err)
	}
	return nil
}

// Release drops the connection and leaves the shell to its holder.
func (p *heldProcess) Release() error {
	p.once.Do(func() {
		p.released.Store(true)
		close(p.stop)
		p.wg.Wait()
		_ = p.c.Close()
	})
	return nil
}

// Kill ends the held session for good: the holder kills the shell and
// everything it started, then exits. Kill returns once the holder's socket
// is gone (or the container is).
func (p *heldProcess) Kill(ctx context.Context) error {
	p.kmu.Lock()
	defer p.kmu.Unlock()
	if p.killed {
		return nil
	}
	err := p.c.End()
	_ = p.Release()
	if err != nil { // the connection broke: end it through a new one
		q, cerr := p.b.connect(ctx, sessions.Instance{Name: p.name, ID: p.container}, p.dir)
		if errors.Is(cerr, sessions.ErrNotHeld) {
			p.killed = true
			return nil
		}
		if cerr != nil {
			return fmt.Errorf("end the held session in %q: %w", p.name, cerr)
		}
		err = q.c.End()
		_ = q.Release()
		if err != nil {
			return fmt.Errorf("end the held session in %q: %w", p.name, err)
		}
	}
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		live, err := p.b.exists(ctx, p.container, socketIn(p.dir))
		if err != nil {
			return fmt.Errorf("end the held session in %q: %w", p.name, err)
		}
		if !live {
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
