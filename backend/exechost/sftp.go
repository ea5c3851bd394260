package exechost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/names"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// sftpServers are where images keep OpenSSH's sftp-server (Debian, Red
// Hat, Alpine, others), in the order tried when the holder cannot run.
var sftpServers = []string{
	"/usr/lib/openssh/sftp-server",
	"/usr/libexec/openssh/sftp-server",
	"/usr/lib/sftp-server",
	"/usr/libexec/sftp-server",
}

// SFTP starts an SFTP server in the instance as its exec user: the
// holder's (termgate-holder sftp), or, where the holder cannot run
// (read-only root, only noexec directories), the instance's own
// sftp-server; a *remote.Unavailable says why neither can.
func (h *Host) SFTP(ctx context.Context, inst sessions.Instance, opts remote.SFTPOptions) (remote.Conn, error) {
	args := []string{"sftp"}
	if opts.Login != "" {
		// Checked first: a refused login reads as one, not as a
		// server that failed to start.
		if err := h.checkLogin(ctx, inst, opts.Login); err != nil {
			return nil, fmt.Errorf("file transfer: %w", err)
		}
		args = append(args, "--login", opts.Login)
	}
	if opts.ReadOnly {
		args = append(args, "--read-only")
	}
	if opts.CwdOf != "" {
		if !names.ValidSessionID(opts.CwdOf) {
			return nil, fmt.Errorf("file transfer: invalid session id %q", opts.CwdOf)
		}
		args = append(args, "--cwd-of", opts.CwdOf)
	}
	s, err := h.runTool(ctx, inst, args...)
	var cannot *CannotHold
	if !errors.As(err, &cannot) {
		if err != nil {
			return nil, fmt.Errorf("file transfer: %w", err)
		}
		return s, nil
	}
	if opts.Login != "" { // checkLogin ran the holder: this is a passing fault
		return nil, fmt.Errorf("file transfer as %q in %q: %w", opts.Login, inst.Name, cannot)
	}
	have, err := h.x.Exists(ctx, inst, sftpServers)
	if err != nil {
		return nil, fmt.Errorf("file transfer in %q: %w", inst.Name, err)
	}
	for i, p := range sftpServers {
		if !have[i] {
			continue
		}
		// The instance's own program, run as its exec user like any
		// command there: it speaks SFTP on stdin/stdout from its start.
		// It ignores opts.CwdOf: it cannot look for the session's shell
		// and always starts in the user's home, so relative paths are
		// the home's there.
		argv := []string{p}
		if opts.ReadOnly {
			argv = append(argv, "-R") // OpenSSH's sftp-server: read-only mode
		}
		s, err := h.x.Exec(ctx, inst, argv, ExecOptions{Stdin: true})
		if err != nil {
			return nil, fmt.Errorf("file transfer in %q: start %s: %w", inst.Name, p, err)
		}
		h.log.Info(h.name+": the holder cannot run here; serving SFTP with the instance's sftp-server", "instance", inst.Name, "server", p, "reason", cannot.Why)
		return &boundStream{Stream: s, stop: context.AfterFunc(ctx, func() { _ = s.Close() })}, nil
	}
	return nil, &remote.Unavailable{Why: fmt.Sprintf("file transfer: instance %q cannot run termgate's SFTP server (%s) and has no sftp-server of its own; install openssh-sftp-server in the image, or give it a writable directory that allows exec (a /tmp without noexec)", inst.Name, cannot.Why)}
}

// Dial connects to host:port from inside the instance's network namespace
// through the holder (termgate-holder dial). Kubernetes has its own. Read
// ends with io.EOF when the peer ended its side, while writes go on until
// CloseWrite (the exec's stdin): both directions half-close on their own.
func (h *Host) Dial(ctx context.Context, inst sessions.Instance, host string, port int) (remote.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("dial: port %d out of range", port)
	}
	return h.dialTool(ctx, inst, "dial", net.JoinHostPort(host, strconv.Itoa(port)))
}

// dialStream is the dial tool's stream, its output unframed: the peer's
// end is a frame (holder.DialWriter), because the exec's own stream ends
// only when the exec does, and that waits for the gateway's side too.
type dialStream struct {
	Stream
	r *holder.DialReader
}

func (d *dialStream) Read(p []byte) (int, error) { return d.r.Read(p) }

// boundStream is a Stream that ctx's end closes.
type boundStream struct {
	Stream
	stop func() bool
}

func (b *boundStream) Close() error {
	b.stop()
	return b.Stream.Close()
}
