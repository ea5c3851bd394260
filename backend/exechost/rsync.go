package exechost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// rsyncPaths are where images keep rsync, tried when the holder cannot
// run (read-only root, only noexec directories).
var rsyncPaths = []string{"/usr/bin/rsync", "/bin/rsync", "/usr/local/bin/rsync"}

// Rsync starts rsync's remote side in the instance: the holder's
// (termgate-holder rsync, github.com/gokrazy/rsync), so that it works the
// same in every image, rsync or none, as the login; where the holder cannot
// run, the instance's own rsync as its exec user (its default login only);
// a *remote.Unavailable says why neither can. The listener checked the
// arguments (a download-only credential: --sender only); the holder
// checks them again.
func (h *Host) Rsync(ctx context.Context, inst sessions.Instance, opts remote.RsyncOptions) (remote.Process, error) {
	args := []string{"rsync"}
	if opts.Login != "" {
		// Checked first, as for SFTP: a refused login reads as one.
		if err := h.checkLogin(ctx, inst, opts.Login); err != nil {
			return nil, fmt.Errorf("rsync: %w", err)
		}
		args = append(args, "--login", opts.Login)
	}
	if opts.ReadOnly {
		args = append(args, "--read-only")
	}
	args = append(append(args, "--"), opts.Args...)
	s, err := h.runTool(ctx, inst, args...)
	var cannot *CannotHold
	if !errors.As(err, &cannot) {
		if err != nil {
			// The tool's own refusal (an option gokrazy's server does not
			// implement, say) is for the user: runToolIn quotes its
			// stderr after "rsync in INSTANCE: ", and the tool starts
			// each of its sentences with "rsync: ".
			if why, ok := strings.CutPrefix(err.Error(), fmt.Sprintf("rsync in %q: ", inst.Name)); ok && strings.HasPrefix(why, "rsync: ") {
				return nil, &remote.Unavailable{Why: why}
			}
			return nil, err
		}
		return &rsyncProcess{Stream: s, stderr: opts.Stderr}, nil
	}
	if opts.Login != "" { // checkLogin ran the holder: this is a passing fault
		return nil, fmt.Errorf("rsync as %q in %q: %w", opts.Login, inst.Name, cannot)
	}
	have, err := h.x.Exists(ctx, inst, rsyncPaths)
	if err != nil {
		return nil, fmt.Errorf("rsync in %q: %w", inst.Name, err)
	}
	for i, p := range rsyncPaths {
		if !have[i] {
			continue
		}
		s, err := h.x.Exec(ctx, inst, append([]string{p}, opts.Args...), ExecOptions{Stdin: true})
		if err != nil {
			return nil, fmt.Errorf("rsync in %q: start %s: %w", inst.Name, p, err)
		}
		h.log.Info(h.name+": the holder cannot run here; serving rsync with the instance's rsync", "instance", inst.Name, "rsync", p, "reason", cannot.Why)
		return &rsyncProcess{Stream: &boundStream{Stream: s, stop: context.AfterFunc(ctx, func() { _ = s.Close() })}, stderr: opts.Stderr}, nil
	}
	return nil, &remote.Unavailable{Why: fmt.Sprintf("rsync: instance %q cannot run termgate's rsync server (%s) and has no rsync of its own; install rsync in the image, or give it a writable directory that allows exec (a /tmp without noexec)", inst.Name, cannot.Why)}
}

// rsyncProcess is an rsync server's stream as a remote.Process: its exit
// status is rsync's, and when it failed, what it said on stderr goes to
// the client's stderr (an error before the protocol started, which the
// client cannot show otherwise).
type rsyncProcess struct {
	Stream
	stderr io.Writer
}

func (p *rsyncProcess) Wait(ctx context.Context) (remote.Exit, error) {
	code, err := p.Stream.Wait(ctx)
	if err != nil {
		return remote.Exit{}, err
	}
	if code != 0 && p.stderr != nil {
		msg := strings.TrimSpace(strings.ReplaceAll(p.Stream.Stderr(), "termgate-holder: ", ""))
		if msg != "" {
			_, _ = io.WriteString(p.stderr, "termgate: "+msg+"\n")
		}
	}
	return remote.Exit{Code: code}, nil
}
