package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/termgate/termgate/backend/heldconn"
	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/sessions"
)

// heldProcess is a gateway's connection to the holder of an instance: an
// exec of "termgate-holder attach SOCKET" (non-TTY: stdin hijacked, stdout
// demultiplexed) carrying the holder protocol. The shell is the holder's
// child, not the exec's: the exec (and the gateway) may die, the shell
// stays.
type heldProcess struct {
	*heldconn.Conn
	b         *Backend
	name      string
	container string
	dir       string // the holder's directory (holderDirs)

	kmu    sync.Mutex // serializes Kill
	killed bool
	// ending is set once Kill starts: the end of the stream is then the
	// kill's, and Read does not wait for the container to say why.
	ending atomic.Bool
}

var _ sessions.HeldProcess = (*heldProcess)(nil)

// dialTimeout bounds the hello and the replay of a connection, so a holder
// that does not answer cannot hang a Start or an Adopt.
const dialTimeout = 15 * time.Second

// connect runs an attach exec to the holder in dir and says hello. An
// error wrapping sessions.ErrNotHeld means no holder answers there; a
// *holder.VersionError, a holder of another protocol version (left alone).
func (b *Backend) connect(ctx context.Context, inst sessions.Instance, dir string) (*heldProcess, error) {
	run, install, err := b.holderBinary(ctx, inst.ID, dir)
	if err != nil {
		return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, err)
	}
	cmd := []string{run, "attach", socketIn(dir)}
	if install != "" { // a holder another build started: bring ours for the attach
		cmd = []string{run, "attach", "--install-as", install, socketIn(dir)}
	}
	x, err := b.openExec(ctx, inst, cmd)
	if err != nil {
		return nil, err
	}
	return b.handshake(ctx, inst, dir, x, 0)
}

// holderBinary returns the path of this build's holder in dir, uploading
// it first under a temporary name when it is not there yet (install is
// then where it must be renamed to).
func (b *Backend) holderBinary(ctx context.Context, containerID, dir string) (run, install string, err error) {
	bin := holderPath(dir, b.held.bin.Hash)
	have, err := b.exists(ctx, containerID, bin)
	if err != nil || have {
		return bin, "", err
	}
	staged, err := b.upload(ctx, containerID, dir)
	if err != nil {
		return "", "", err
	}
	return staged, bin, nil
}

// openedExec is a started non-TTY exec with its input hijacked and its
// output demultiplexed (and buffered, so a status line can be read off
// its front).
type openedExec struct {
	id    string
	conn  net.Conn
	demux *demuxReader
	r     *bufio.Reader
}

func (b *Backend) openExec(ctx context.Context, inst sessions.Instance, cmd []string) (*openedExec, error) {
	created, err := b.cli.ContainerExecCreate(ctx, inst.ID, container.ExecOptions{
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          cmd,
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
			return nil, fmt.Errorf("exec in %q: %w: %w", inst.Name, sessions.ErrNotFound, err)
		}
		return nil, b.engineErr(fmt.Sprintf("exec in %q", inst.Name), err)
	}
	hr, err := b.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, b.engineErr(fmt.Sprintf("exec in %q", inst.Name), err)
	}
	d := newDemuxReader(hr.Reader)
	return &openedExec{id: created.ID, conn: hr.Conn, demux: d, r: bufio.NewReaderSize(d, 64<<10)}, nil
}

// deadline bounds a handshake on x: dialTimeout, or ctx's deadline when
// sooner, and ctx's cancellation. The returned stop lifts both.
func (x *openedExec) deadline(ctx context.Context) (stop func()) {
	deadline := time.Now().Add(dialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = x.conn.SetDeadline(deadline)
	stopWatch := closeOnDone(ctx, x.conn)
	return func() {
		stopWatch()
		_ = x.conn.SetDeadline(time.Time{})
	}
}

// handshake says hello to the holder over x and reads the replay. clients
// is the count the holder starts with for this gateway (see
// HelloMsg.Clients).
func (b *Backend) handshake(ctx context.Context, inst sessions.Instance, dir string, x *openedExec, clients int) (*heldProcess, error) {
	stop := x.deadline(ctx)
	c, rep, err := holder.DialClients(execStream{conn: x.conn, r: x.r}, b.gatewayID, "", 0, clients)
	var replay []byte
	if err == nil {
		if replay, err = c.ReadReplay(); err != nil {
			c.Close()
		}
	}
	stop()
	if err != nil {
		x.conn.Close()
		var verr *holder.VersionError
		switch {
		case errors.As(err, &verr):
			return nil, fmt.Errorf("instance %q: %w", inst.Name, err)
		case strings.Contains(x.demux.Stderr(), "no holder answers"):
			return nil, fmt.Errorf("instance %q: %w (stale socket %s)", inst.Name, sessions.ErrNotHeld, socketIn(dir))
		case ctx.Err() != nil:
			return nil, fmt.Errorf("connect to the holder in %q: %w", inst.Name, ctx.Err())
		}
		return nil, fmt.Errorf("connect to the holder in %q: %w %s", inst.Name, err, strings.TrimSpace(x.demux.Stderr()))
	}
	p := &heldProcess{b: b, name: inst.Name, container: inst.ID, dir: dir}
	p.Conn = heldconn.New(inst.Name, b.gatewayID, c, rep, replay, clients, heldconn.Hooks{Lost: p.lost, Exited: p.exited})
	return p, nil
}

// execStream is the attach exec's stream as holder.Dial sees it: input
// to the hijacked connection, output demultiplexed from it.
type execStream struct {
	conn net.Conn
	r    io.Reader
}

func (s execStream) Read(b []byte) (int, error)  { return s.r.Read(b) }
func (s execStream) Write(b []byte) (int, error) { return s.conn.Write(b) }
func (s execStream) Close() error                { return s.conn.Close() }

// exited is the cause for the holder's report that the shell exited with
// code: a signal exit while the container stops is the container's stop.
func (p *heldProcess) exited(code int) error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	return p.b.exitCause(ctx, p.container, code, p.ending.Load)
}

// lost is the cause for a connection to the holder that ended without the
// holder saying why: the container stopped, or only the connection broke
// (the shell runs on). io.EOF when the shell is being killed anyway.
func (p *heldProcess) lost() error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	switch {
	case p.b.stopping(ctx, p.container, p.ending.Load):
		return sessions.ErrInstanceGone
	case p.ending.Load():
		return io.EOF
	}
	p.b.log.Warn("docker: connection to the holder broke; the shell keeps running", "instance", p.name)
	return sessions.ErrHolderLost
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
	p.ending.Store(true)
	err := p.Client().End()
	_ = p.Release()
	if err != nil { // the connection broke: end it through a new one
		if done, err := p.endAgain(ctx); done || err != nil {
			return err
		}
	}
	// The end frame can still be lost after End returned: it goes through
	// the exec's stdin, which the engine may close before passing it on
	// when the connection is closed right after (seen once in CI under
	// load: the holder took it for a gateway leaving). If the holder
	// still runs after a while, say it again through a new connection.
	again := time.Now().Add(3 * time.Second)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		live, err := p.b.exists(ctx, p.container, socketIn(p.dir))
		if err != nil {
			return fmt.Errorf("end the held session in %q: %w", p.name, err)
		}
		if !live {
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
			return fmt.Errorf("end the held session in %q: the holder still runs: %w", p.name, ctx.Err())
		case <-t.C:
		}
	}
}

// endAgain ends the held session through a new connection to its holder.
// done reports that the session is over already (the container stopped,
// or no holder holds it any more).
func (p *heldProcess) endAgain(ctx context.Context) (done bool, err error) {
	if p.b.checkGone(ctx, p.container, nil) == nil {
		p.killed = true // the container stopped: so did the holder
		return true, nil
	}
	q, err := p.b.connect(ctx, sessions.Instance{Name: p.name, ID: p.container}, p.dir)
	if errors.Is(err, sessions.ErrNotHeld) {
		p.killed = true
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("end the held session in %q: %w", p.name, err)
	}
	err = q.Client().End()
	_ = q.Release()
	if err != nil {
		return false, fmt.Errorf("end the held session in %q: %w", p.name, err)
	}
	return false, nil
}
