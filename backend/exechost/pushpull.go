package exechost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/termgate/termgate/sessions"
)

// PushIO is what a push-style exec API's call is handed (client-go's
// remotecommand StreamOptions, a Nomad alloc exec, a containerd task's
// FIFOs): it reads the exec's input from Stdin and writes its output to
// Stdout and Stderr itself, on its own copiers.
type PushIO struct {
	Stdin  io.Reader // nil: the exec has no stdin
	Stdout io.Writer
	Stderr io.Writer // nil with a TTY (the terminal merges it into Stdout)
	// Sizes, with a TTY (else nil), blocks for the next terminal size to
	// send (the first is ExecOptions.Size); false once the stream ended.
	Sizes func() (sessions.Size, bool)
}

// Push is one push-style exec, for StartPush.
type Push struct {
	// Run runs the exec to its end and returns how it ended. It runs on a
	// goroutine the stream owns; ctx ends when the stream is closed.
	Run func(ctx context.Context, pio PushIO) error
	// Status reads Run's result: the exit status, or the error that ended
	// the stream without one.
	Status func(runErr error) (int, error)
	// Broke, when set, is the error a Read ends with after the stream
	// ended without a status (err from Status); NoStatus, when set,
	// explains that error for Wait (which wraps ErrNoStatus around it).
	Broke, NoStatus func(err error) error
}

// PushStream adapts a push-style exec to the pull Stream the Host reads
// from (the session's pump reads into its own slab): the exec writes its
// output into an outPipe, reads its input from an io.Pipe, and takes its
// sizes from a one-slot queue. Its one goroutine (Run) is owned: Close
// ends it and waits for it.
type PushStream struct {
	p      Push
	tty    bool
	stdin  bool
	stderr io.Writer // a command's stderr sink; nil: keep the first 4 KiB in err

	inR *io.PipeReader // the exec reads its input here
	inW *io.PipeWriter
	out *outPipe  // and writes its output here
	err capBuffer // the first 4 KiB of its stderr (without a TTY)

	sizes  chan sessions.Size // the latest size not yet sent; capacity 1
	smu    sync.Mutex         // makes replacing the pending size atomic
	up     chan struct{}      // closed when the exec first reads input: its stream is up
	upOnce sync.Once

	cancel context.CancelFunc // ends the stream
	done   chan struct{}      // closed when Run returned; then runErr is set
	runErr error
	wg     sync.WaitGroup
	once   sync.Once
}

// StartPush starts p's Run for an exec shaped by opts and returns its
// stream at once (see AwaitUp for a TTY exec's start).
func StartPush(p Push, opts ExecOptions) *PushStream {
	s := &PushStream{p: p, tty: opts.TTY, stdin: opts.Stdin, stderr: opts.Stderr,
		sizes: make(chan sessions.Size, 1), up: make(chan struct{}), done: make(chan struct{})}
	s.inR, s.inW = io.Pipe()
	s.out = newOutPipe()
	s.err.n = 4 << 10
	if opts.TTY {
		s.sizes <- opts.Size
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	pio := PushIO{Stdout: s.out}
	if s.stdin {
		pio.Stdin = upReader{s}
	}
	switch {
	case s.tty:
		pio.Sizes = s.nextSize
	case s.stderr != nil:
		pio.Stderr = KeepWriting(s.stderr)
	default:
		pio.Stderr = &s.err
	}
	// When Run returns the output pipe reports how: io.EOF when the
	// program exited (its status is in runErr), else the error.
	s.wg.Go(func() {
		err := p.Run(ctx, pio)
		s.runErr = err
		close(s.done)
		if _, werr := p.Status(err); werr != nil && !errors.Is(werr, context.Canceled) {
			if p.Broke != nil {
				werr = p.Broke(werr)
			}
			s.out.CloseWithError(werr)
		} else {
			s.out.Close()
		}
		// Run's stdin copier may still wait in Read: end it.
		s.inW.Close()
	})
	return s
}

// AwaitUp waits for a TTY exec's stream to be up (its first read of
// input: the exec was accepted) or to end. It returns nil then, unless the
// stream ended without a status: that error (from Status), the stream
// closed. When ctx ends first it closes the stream and returns ctx's error
// wrapped in ErrMaybeStarted.
func (s *PushStream) AwaitUp(ctx context.Context) error {
	select {
	case <-s.up:
		return nil
	case <-s.done:
		_, err := s.p.Status(s.runErr)
		if err == nil {
			// The program ran and ended at once: let the session read
			// what it said and its exit code.
			return nil
		}
		_ = s.Close()
		return err
	case <-ctx.Done():
		_ = s.Close()
		return fmt.Errorf("%w: %w", ErrMaybeStarted, ctx.Err())
	}
}

// upReader is the exec's stdin: its first Read says the stream is up.
type upReader struct{ s *PushStream }

func (r upReader) Read(b []byte) (int, error) {
	r.s.upOnce.Do(func() { close(r.s.up) })
	return r.s.inR.Read(b)
}

// nextSize is PushIO.Sizes.
func (s *PushStream) nextSize() (sessions.Size, bool) {
	select {
	case sz := <-s.sizes:
		return sz, true
	case <-s.done:
		return sessions.Size{}, false
	}
}

func (s *PushStream) Read(b []byte) (int, error) { return s.out.Read(b) }

func (s *PushStream) Write(b []byte) (int, error) { return s.inW.Write(b) }

func (s *PushStream) CloseWrite() error { return s.inW.Close() }

// Resize queues the size for the exec's resize stream, replacing one not
// sent yet (only the latest matters).
func (s *PushStream) Resize(_ context.Context, size sessions.Size) error {
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
func (s *PushStream) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	code, err := s.p.Status(s.runErr)
	if err != nil {
		if s.p.NoStatus != nil {
			err = s.p.NoStatus(err)
		}
		return -1, fmt.Errorf("%w: %w", ErrNoStatus, err)
	}
	return code, nil
}

func (s *PushStream) Stderr() string { return s.err.String() }

// Close ends the stream (the program sees its stdin end) and waits for
// its goroutine.
func (s *PushStream) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.inR.CloseWithError(io.ErrClosedPipe)
		s.out.CloseRead()
		s.wg.Wait()
	})
	return nil
}

// capBuffer keeps the first n bytes written to it; writes may come from
// any goroutine.
type capBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int
}

func (l *capBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := min(len(p), l.n); k > 0 {
		l.n -= k
		l.buf.Write(p[:k])
	}
	return len(p), nil
}

func (l *capBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.buf.String())
}
