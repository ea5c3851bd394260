package remote

import (
	"context"
	"io"

	"github.com/termgate/termgate/sessions"
)

// Rsync is what a backend that can serve rsync's remote side offers
// besides a Runner (CONTRACT.md "SSH: commands, files and forwarding",
// Files: rsync works even in an instance that has no rsync). A Runner
// without it runs `rsync --server ...` as any command, with the
// instance's own rsync.
type Rsync interface {
	// Rsync starts rsync's remote side in the instance: its stdin and
	// stdout are the protocol's stream; its exit status is rsync's.
	Rsync(ctx context.Context, inst sessions.Instance, opts RsyncOptions) (Process, error)
}

// RsyncOptions are how rsync's remote side starts.
type RsyncOptions struct {
	// Args are the words after "rsync" in the client's remote command
	// (--server [--sender] OPTIONS . PATH...), parsed by the listener.
	Args []string
	// ReadOnly serves only a download (--sender), for a download-only
	// credential.
	ReadOnly bool
	// Login is the instance's user it runs as ("" the default user).
	Login string
	// Stderr receives what the server wrote to its stderr (its first
	// KiBs) when it failed; nil discards it.
	Stderr io.Writer
}
