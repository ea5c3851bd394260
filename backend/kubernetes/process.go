package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/sessions"
)

// autoShell starts bash as a login shell when the container has it, else sh.
const autoShell = `if command -v bash >/dev/null 2>&1; then exec bash -il; fi; exec sh -l`

// envWrapper puts TERM and the session marker in the environment, since
// PodExecOptions has none, then runs the shell. Both values are passed as
// arguments (and validated), never spliced into the script.
const envWrapper = `export TERM="$1" ` + procmark.EnvSession + `="$2"; shift 2; exec "$@"`

// Start runs the shell in the instance's container as a TTY exec marked
// with TERMGATE_SESSION and returns once the exec's stream is up.
func (b *Backend) Start(ctx context.Context, inst sessions.Instance, spec sessions.StartSpec) (sessions.Process, error) {
	t, err := parseID(inst)
	if err != nil {
		return nil, err
	}
	sh, err := procmark.ForStart(b.gatewayID, inst.Name, spec)
	if err != nil {
		return nil, err
	}
	marker, size, term := sh.Marker, sh.Size, sh.Term
	if b.held != nil {
		p, err := b.startHeld(ctx, inst, t, spec, size, term)
		var cannot *errCannotHold
		if !errors.As(err, &cannot) {
			return p, err
		}
		b.log.Warn("kubernetes: this pod cannot hold a durable session; starting an ordinary one, which ends with the gateway",
			"instance", inst.Name, "reason", cannot.why)
	}
	cmd := append([]string{"/bin/sh", "-c", envWrapper, "termgate-shell", term, marker}, b.command(spec.Shell)...)
	ex, err := b.executor(t, cmd, true)
	if err != nil {
		return nil, err
	}
	p := newProcess(b, inst.Name, t, marker, size)
	p.run(ex)
	select {
	case <-p.up:
		return p, nil
	case <-p.done:
		_, err := exitCode(p.streamErr)
		if err == nil {
			// The shell ran and ended at once: let the session read
			// what it said and its exit code.
			return p, nil
		}
		p.close()
		if gone := b.gone(context.WithoutCancel(ctx), t); gone {
			return nil, fmt.Errorf("start shell in %q: %w: %w", inst.Name, sessions.ErrNotFound, err)
		}
		return nil, fmt.Errorf("start shell in %q: %w", inst.Name, b.execErr(t, err))
	case <-ctx.Done():
		// The exec may have started meanwhile: leave no shell behind.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		defer cancel()
		_ = p.Kill(kctx)
		return nil, fmt.Errorf("start shell in %q: %w", inst.Name, ctx.Err())
	}
}

func (b *Backend) command(shell []string) []string {
	switch {
	case len(shell) > 0:
		return append([]string(nil), shell...)
	case len(b.shell) > 0:
		return append([]string(nil), b.shell...)
	}
	return []string{"/bin/sh", "-c", autoShell, "termgate-shell"}
}

// process is one TTY exec. Its stream runs on a goroutine the process owns
// (run); close ends it and waits for it.
type process struct {
	b       *Backend
	name    string
	t       target
	session string

	inR *io.PipeReader // the exec reads the shell's input here
	inW *io.PipeWriter
	out *outPipe // and writes the terminal's output here

	sizes  chan sessions.Size // the latest size not yet sent; capacity 1
	smu    sync.Mutex         // makes replacing the pending size atomic
	up     chan struct{}      // closed when the exec first reads input: its stream is up
	upOnce sync.Once

	cancel    context.CancelFunc // ends the stream
	done      chan struct{}      // closed when the stream ended; then streamErr is set
	streamErr error
	wg        sync.WaitGroup

	once   sync.Once
	kmu    sync.Mutex // serializes Kill
	killed bool
}

func newProcess(b *Backend, name string, t target, marker string, size sessions.Size) *process {
	p := &process{
		b:       b,
		name:    name,
		t:       t,
		session: marker,
		sizes:   make(chan sessions.Size, 1),
		up:      make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.inR, p.inW = io.Pipe()
	p.out = newOutPipe()
	p.sizes <- size
	return p
}

// run starts the stream. When it ends the output pipe reports how: io.EOF
// when the shell exited (its status is in streamErr), else the error.
func (p *process) run(ex remotecommand.Executor) {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Go(func() {
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{
			Stdin:             upReader{p},
			Stdout:            p.out,
			Tty:               true,
			TerminalSizeQueue: sizeQueue{p},
		})
		p.streamErr = err
		close(p.done)
		if _, werr := exitCode(err); werr != nil && !errors.Is(werr, context.Canceled) {
			p.out.CloseWithError(fmt.Errorf("terminal stream of the shell in pod %q broke: %w", p.name, werr))
		} else {
			p.out.Close()
		}
		// The executor's stdin copier may still wait in Read: end it.
		p.inW.Close()
	})
}

// upReader is the exec's stdin: its first Read says the stream is up.
type upReader struct{ p *process }

func (r upReader) Read(b []byte) (int, error) {
	r.p.upOnce.Do(func() { close(r.p.up) })
	return r.p.inR.Read(b)
}

// sizeQueue feeds the exec's resize stream; nil ends it.
type sizeQueue struct{ p *process }

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s := <-q.p.sizes:
		return &remotecommand.TerminalSize{Width: uint16(s.Cols), Height: uint16(s.Rows)}
	case <-q.p.done:
		return nil
	}
}

func (p *process) Read(buf []byte) (int, error) { return p.out.Read(buf) }

func (p *process) Write(buf []byte) (int, error) {
	n, err := p.inW.Write(buf)
	if err != nil {
		return n, fmt.Errorf("write to shell in %q: %w", p.name, err)
	}
	return n, nil
}

// Resize queues the size for the exec's resize stream, replacing one not
// sent yet (only the latest matters).
func (p *process) Resize(ctx context.Context, size sessions.Size) error {
	if !size.Valid() {
		return fmt.Errorf("resize shell in %q to %dx%d: %w", p.name, size.Cols, size.Rows, sessions.ErrBadSize)
	}
	p.smu.Lock()
	defer p.smu.Unlock()
	select {
	case <-p.sizes:
	default:
	}
	p.sizes <- size
	return nil
}

// Wait returns the shell's exit code once the stream has ended.
func (p *process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return -1, fmt.Errorf("wait for shell in %q: %w", p.name, ctx.Err())
	}
	code, err := exitCode(p.streamErr)
	if err != nil {
		return -1, fmt.Errorf("shell in %q: exit status unknown: %w", p.name, err)
	}
	return code, nil
}

// close ends the stream and waits for its goroutine; a Read then returns.
func (p *process) close() {
	p.once.Do(func() {
		p.cancel()
		p.inR.CloseWithError(io.ErrClosedPipe)
		p.wg.Wait()
		p.out.CloseRead()
	})
}
