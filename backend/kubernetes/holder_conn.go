package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
)

// execConn is a started non-TTY exec whose stdin and stdout carry a byte
// stream (the holder protocol, after a status line): what the Docker
// backend gets from a hijacked exec connection. Its stream runs on a
// goroutine the execConn owns; Close ends it and waits for it.
type execConn struct {
	inR *io.PipeReader // the exec reads its stdin here
	inW *io.PipeWriter
	out *outPipe      // and writes its stdout here
	r   *bufio.Reader // over out, so a status line can be read off the front

	stderr lockedBuffer // the first 4 KiB of its stderr

	cancel    context.CancelFunc
	done      chan struct{} // closed when the stream ended; then streamErr is set
	streamErr error
	wg        sync.WaitGroup
	once      sync.Once
	// keepOpen makes Close a no-op during a handshake, whose failure
	// must first read why from the ended exec's stderr.
	keepOpen atomic.Bool
}

// pipeExecutor is an exec of command with stdin, stdout and stderr and
// no TTY: a binary stream.
func (b *Backend) pipeExecutor(t target, command []string) (remotecommand.Executor, error) {
	return b.newExecutor(t, &corev1.PodExecOptions{
		Container: t.container, Command: command, Stdin: true, Stdout: true, Stderr: true,
	})
}

// openExec starts command in the target's container with stdin, stdout
// and stderr attached (no TTY: the stream is binary).
func (b *Backend) openExec(t target, command []string) (*execConn, error) {
	ex, err := b.pipeExecutor(t, command)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	x := &execConn{cancel: cancel, done: make(chan struct{})}
	x.inR, x.inW = io.Pipe()
	x.out = newOutPipe()
	x.r = bufio.NewReaderSize(x.out, 64<<10)
	x.stderr.n = 4 << 10
	x.wg.Go(func() {
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{
			Stdin:  x.inR,
			Stdout: x.out,
			Stderr: &x.stderr,
		})
		x.streamErr = err
		close(x.done)
		if err == nil {
			x.out.Close()
		} else {
			x.out.CloseWithError(err)
		}
		// The executor's stdin copier may still wait in Read: end it.
		x.inW.Close()
	})
	return x, nil
}

func (x *execConn) Read(p []byte) (int, error) { return x.r.Read(p) }

func (x *execConn) Write(p []byte) (int, error) { return x.inW.Write(p) }

// Close ends the exec's stream (the program in the pod sees its stdin
// end) and waits for the stream's goroutine.
func (x *execConn) Close() error {
	if x.keepOpen.Load() {
		return nil
	}
	x.shutdown()
	return nil
}

func (x *execConn) shutdown() {
	x.once.Do(func() {
		x.cancel()
		x.inR.CloseWithError(io.ErrClosedPipe)
		x.out.CloseRead()
		x.wg.Wait()
	})
}

// exit waits (at most a second) for the stream to end and returns the
// exec's exit status, or -1 and the error that ended the stream without
// one.
func (x *execConn) exit() (int, error) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-x.done:
	case <-t.C:
		return -1, errors.New("the exec did not end")
	}
	return exitCode(x.streamErr)
}

// deadline bounds a handshake on x: dialTimeout, or ctx's deadline when
// sooner, and ctx's cancellation close x. The returned stop lifts both.
func (x *execConn) deadline(ctx context.Context) (stop func()) {
	d := dialTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	t := time.AfterFunc(d, x.shutdown)
	stopCtx := context.AfterFunc(ctx, x.shutdown)
	return func() {
		t.Stop()
		stopCtx()
	}
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

// stderrOf says what an exec printed on stderr, for an error message.
func stderrOf(x *execConn) string {
	if s := x.stderr.String(); s != "" {
		return fmt.Sprintf(" (%s)", s)
	}
	return ""
}
