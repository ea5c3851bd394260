package kubernetes

import (
	"context"
	"errors"
	"fmt"

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

// Exec starts argv in the instance's container: client-go's push-style
// StreamWithContext, turned into a pull exechost.Stream by
// exechost.StartPush (its goroutine is the stream's). A TTY exec returns
// once its stream is up (the exec first reads its input), so that an exec
// the API server refuses fails here.
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
	s := exechost.StartPush(exechost.Push{
		Run: func(ctx context.Context, pio exechost.PushIO) error {
			return ex.StreamWithContext(ctx, streamOptions(pio, opts.TTY))
		},
		Status:   exitCode,
		Broke:    func(err error) error { return fmt.Errorf("exec stream in pod %q broke: %w", t.pod, err) },
		NoStatus: func(err error) error { return p.execErr(t, err) },
	}, opts)
	if !opts.TTY {
		return s, nil
	}
	switch err := s.AwaitUp(ctx); {
	case err == nil:
		return s, nil
	case errors.Is(err, exechost.ErrMaybeStarted):
		return nil, err
	case p.gone(context.WithoutCancel(ctx), t):
		return nil, fmt.Errorf("%w: %w", sessions.ErrNotFound, err)
	default:
		return nil, p.execErr(t, err)
	}
}

// streamOptions hands pio to client-go.
func streamOptions(pio exechost.PushIO, tty bool) remotecommand.StreamOptions {
	opts := remotecommand.StreamOptions{Stdin: pio.Stdin, Stdout: pio.Stdout, Stderr: pio.Stderr, Tty: tty}
	if pio.Sizes != nil {
		opts.TerminalSizeQueue = sizeQueue(pio.Sizes)
	}
	return opts
}

// sizeQueue feeds the exec's resize stream; nil ends it.
type sizeQueue func() (sessions.Size, bool)

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	sz, ok := q()
	if !ok {
		return nil
	}
	return &remotecommand.TerminalSize{Width: uint16(sz.Cols), Height: uint16(sz.Rows)}
}
