package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/sessions"
)

// execWrapper puts the exec's environment in place, since PodExecOptions
// has none, then runs argv: `sh -c execWrapper termgate-exec KEY=VALUE...
// -- ARGV...`. The values are arguments (validated by the exec host), never
// spliced into the script, and a program that cannot run ends the exec
// with the shell's 126 or 127, as the Docker runtime does.
const execWrapper = `while [ "$1" != -- ]; do export "$1"; shift; done; shift; exec "$@"`

// pods is the Backend as the exec host sees it (exechost.Executor).
type pods struct{ *Backend }

// Exec starts argv in the instance's container. A TTY exec returns once
// its stream is up (the exec first reads its input), so that an exec the
// API server refuses fails here.
func (p pods) Exec(ctx context.Context, inst sessions.Instance, argv []string, opts exechost.ExecOptions) (exechost.Stream, error) {
	t, err := parseID(inst)
	if err != nil {
		return nil, err
	}
	cmd := append(append(append([]string{"/bin/sh", "-c", execWrapper, "termgate-exec"}, opts.Env...), "--"), argv...)
	ex, err := p.newExecutor(t, &corev1.PodExecOptions{
		Container: t.container, Command: cmd, Stdin: opts.Stdin, Stdout: true, Stderr: !opts.TTY, TTY: opts.TTY,
	})
	if err != nil {
		return nil, err
	}
	s := newStream(p.Backend, t, opts)
	s.run(ex)
	if !opts.TTY {
		return s, nil
	}
	select {
	case <-s.up:
		return s, nil
	case <-s.done:
		_, err := exitCode(s.streamErr)
		if err == nil {
			// The shell ran and ended at once: let the session read
			// what it said and its exit code.
			return s, nil
		}
		_ = s.Close()
		if p.gone(context.WithoutCancel(ctx), t) {
			return nil, fmt.Errorf("%w: %w", sessions.ErrNotFound, err)
		}
		return nil, p.execErr(t, err)
	case <-ctx.Done():
		_ = s.Close()
		return nil, fmt.Errorf("%w: %w", exechost.ErrMaybeStarted, ctx.Err())
	}
}

// stream is one exec. Its stream runs on a goroutine the stream owns
// (run); Close ends it and waits for it.
type stream struct {
	b      *Backend
	t      target
	tty    bool
	stdin  bool
	stderr io.Writer // a command's stderr sink; nil: keep the first 4 KiB in err

	inR *io.PipeReader // the exec reads its input here
	inW *io.PipeWriter
	out *outPipe     // and writes its output here
	err lockedBuffer // the first 4 KiB of its stderr (without a TTY)

	sizes  chan sessions.Size // the latest size not yet sent; capacity 1
	smu    sync.Mutex         // makes replacing the pending size atomic
	up     chan struct{}      // closed when the exec first reads input: its stream is up
	upOnce sync.Once

	cancel    context.CancelFunc // ends the stream
	done      chan struct{}      // closed when the stream ended; then streamErr is set
	streamErr error
	wg        sync.WaitGroup
	once      sync.Once
}

func newStream(b *Backend, t target, opts exechost.ExecOptions) *stream {
	s := &stream{b: b, t: t, tty: opts.TTY, stdin: opts.Stdin, stderr: opts.Stderr, sizes: make(chan sessions.Size, 1), up: make(chan struct{}), done: make(chan struct{})}
	s.inR, s.inW = io.Pipe()
	s.out = newOutPipe()
	s.err.n = 4 << 10
	if opts.TTY {
		s.sizes <- opts.Size
	}
	return s
}

// run starts the stream. When it ends the output pipe reports how: io.EOF
// when the program exited (its status is in streamErr), else the error.
func (s *stream) run(ex remotecommand.Executor) {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	opts := remotecommand.StreamOptions{Stdout: s.out, Tty: s.tty}
	if s.stdin {
		opts.Stdin = upReader{s}
	}
	if s.tty {
		opts.TerminalSizeQueue = sizeQueue{s}
	} else if s.stderr != nil {
		opts.Stderr = exechost.KeepWriting(s.stderr)
	} else {
		opts.Stderr = &s.err
	}
	s.wg.Go(func() {
		err := ex.StreamWithContext(ctx, opts)
		s.streamErr = err
		close(s.done)
		if _, werr := exitCode(err); werr != nil && !errors.Is(werr, context.Canceled) {
			s.out.CloseWithError(fmt.Errorf("exec stream in pod %q broke: %w", s.t.pod, werr))
		} else {
			s.out.Close()
		}
		// The executor's stdin copier may still wait in Read: end it.
		s.inW.Close()
	})
}

// upReader is the exec's stdin: its first Read says the stream is up.
type upReader struct{ s *stream }

func (r upReader) Read(b []byte) (int, error) {
	r.s.upOnce.Do(func() { close(r.s.up) })
	return r.s.inR.Read(b)
}

// sizeQueue feeds the exec's resize stream; nil ends it.
type sizeQueue struct{ s *stream }

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case sz := <-q.s.sizes:
		return &remotecommand.TerminalSize{Width: uint16(sz.Cols), Height: uint16(sz.Rows)}
	case <-q.s.done:
		return nil
	}
}

func (s *stream) Read(b []byte) (int, error) { return s.out.Read(b) }

func (s *stream) Write(b []byte) (int, error) { return s.inW.Write(b) }

func (s *stream) CloseWrite() error { return s.inW.Close() }

// Resize queues the size for the exec's resize stream, replacing one not
// sent yet (only the latest matters).
func (s *stream) Resize(_ context.Context, size sessions.Size) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	select {
	case <-s.sizes:
	default:
	}
	s.sizes <- size
	return nil
}

// Wait returns the exit status once the stream has ended.
func (s *stream) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	code, err := exitCode(s.streamErr)
	if err != nil {
		return -1, fmt.Errorf("%w: %w", exechost.ErrNoStatus, s.b.execErr(s.t, err))
	}
	return code, nil
}

func (s *stream) Stderr() string { return s.err.String() }

// Close ends the stream (the program in the pod sees its stdin end) and
// waits for its goroutine.
func (s *stream) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.inR.CloseWithError(io.ErrClosedPipe)
		s.out.CloseRead()
		s.wg.Wait()
	})
	return nil
}

// lockedBuffer keeps the first n bytes written to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := min(len(p), l.n); k > 0 {
		l.n -= k
		l.buf.Write(p[:k])
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.buf.String())
}
