package docker

import (
	"bytes"
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// execResult is a finished non-TTY exec.
type execResult struct {
	Stdout, Stderr string
	Code           int
}

// runExec runs cmd in the container as a non-TTY exec without input and
// returns its output (at most 64 KiB of each stream) and exit status. A
// command that could not be started at all (a missing file, a noexec
// mount) is an exec that ran and failed: status 126 or 127 and the
// runtime's message in its output.
func (b *Backend) runExec(ctx context.Context, containerID string, cmd []string) (execResult, error) {
	created, err := b.cli.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          cmd,
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
			return execResult{}, fmt.Errorf("create exec: %w", err)
		}
		return execResult{}, b.engineErr("create exec", err)
	}
	hr, err := b.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return execResult{}, b.engineErr("start exec", err)
	}
	stop := closeOnDone(ctx, hr.Conn)
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&limitWriter{w: &stdout, n: 64 << 10}, &limitWriter{w: &stderr, n: 64 << 10}, hr.Reader)
	stop()
	hr.Close()
	if ctx.Err() != nil {
		return execResult{}, fmt.Errorf("exec: %w", ctx.Err())
	}
	if err != nil {
		return execResult{}, fmt.Errorf("read exec output: %w", err)
	}
	info, err := b.cli.ContainerExecInspect(ctx, created.ID)
	if err != nil {
		return execResult{}, b.engineErr("inspect exec", err)
	}
	return execResult{Stdout: stdout.String(), Stderr: stderr.String(), Code: info.ExitCode}, nil
}
