package sshd

import (
	"github.com/termgate/termgate/internal/relaybuf"
	"github.com/termgate/termgate/sessions"
)

// A client that fell too far behind the output is brought forward by
// sessions (contract, session semantics 8): Take returns a
// *sessions.Skipped event, and the next Take starts with the redraw of the
// current screen. Over SSH the redraw goes first, then the one-line
// [termgate] notice, then the live output.

// writeOutput writes what Take returned; after a skip (pending), the
// redraw (the first chunk), the notice, then the rest. It clears pending
// once the notice is written.
func (r *relay) writeOutput(bufs [][]byte, pending **sessions.Skipped) error {
	n := len(bufs)
	if *pending != nil {
		n = 1 // the redraw is one chunk
	}
	if err := r.guard.do(func() error { return relaybuf.Write(r.out, bufs[:n]) }); err != nil {
		return err
	}
	if *pending == nil {
		return nil
	}
	skipped := *pending
	*pending = nil
	r.sess.log.Info("brought forward after falling behind the output", "instance", r.name, "skipped", skipped.Bytes, "offset", skipped.Offset)
	if err := r.notice(r.out, skipped.String()); err != nil {
		return err
	}
	if n == len(bufs) {
		return nil
	}
	return r.guard.do(func() error { return relaybuf.Write(r.out, bufs[n:]) })
}
